/** Time comes in through this, so tests can move it; the domain never calls Date.now(). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
