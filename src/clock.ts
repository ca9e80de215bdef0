/** Time comes in through this, so tests can move it; the domain never calls Date.now(). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The moment `seconds` before `time`: the cutoff of a window or a retention. */
export function secondsBefore(time: Date, seconds: number): Date {
  return new Date(time.getTime() - seconds * 1000);
}
