/**
 * How long a password check must take at least, so that its time does not tell an imported
 * account (a hash made by another system, checked until its first good sign-in re-hashes it) from
 * an account of this service or from an unknown identity (the dummy check).
 *
 * Other systems' hashes cost what they cost: phpass or SHA-256 far less than argon2id, bcrypt at
 * cost 10 three to four times more. So an argon2 check (a known account or an unknown identity)
 * in a store that has met legacy hashes is held to a duration drawn from its recent legacy checks,
 * and a legacy check to one drawn from the recent argon2 checks: each waits as long as the other
 * kind when that is slower. A legacy check is not held to its own kind's durations, which would
 * push it past the others by what it already spent. Drawing a recent duration,
 * rather than holding to an average or the most seen, gives the padded check the spread of the one
 * it copies, so their distributions match, not only their middles.
 *
 * What this cannot hide: the first legacy check in a store after a start, or after a day without
 * one, has nothing to be copied by the argon2 checks before it; and in a store whose imported
 * hashes mix formats of very different costs, the costliest stand out from the mixture.
 */

/** Recent durations kept per kind: enough for their spread, few enough to follow a change of load. */
const keptDurations = 32;
/** A store whose last legacy check is this old has no legacy floor left: its imports are signed in. */
const legacyFloorLifetimeMs = 24 * 60 * 60 * 1000;
/** Stores with a legacy floor kept at most (each a few hundred bytes); the least recent goes first. */
const maxLanes = 10_000;

class RecentDurations {
  private readonly durations: number[] = [];
  private next = 0;
  lastAt = 0;

  add(ms: number, at: number): void {
    this.durations[this.next] = ms;
    this.next = (this.next + 1) % keptDurations;
    this.lastAt = at;
  }

  /** One of the recent durations, drawn at random; 0 before any. */
  draw(): number {
    if (this.durations.length === 0) return 0;
    return this.durations[Math.floor(Math.random() * this.durations.length)] ?? 0;
  }
}

export class CheckFloors {
  /** The durations of argon2 checks of the service's own parameters, every lane together. */
  private readonly own = new RecentDurations();
  private readonly legacyByLane = new Map<string, RecentDurations>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The least time a check of this kind in this lane (store) takes before it answers. */
  floorMs(lane: string, legacy: boolean): number {
    return legacy ? this.own.draw() : this.laneFloorMs(lane);
  }

  private laneFloorMs(lane: string): number {
    const seen = this.legacyByLane.get(lane);
    if (seen === undefined) return 0;
    if (this.now() - seen.lastAt > legacyFloorLifetimeMs) {
      this.legacyByLane.delete(lane);
      return 0;
    }
    return seen.draw();
  }

  /** How long a check took on its thread, before any floor held it. */
  record(lane: string, legacy: boolean, ms: number): void {
    if (ms <= 0) return;
    const at = this.now();
    if (!legacy) return this.own.add(ms, at);
    let seen = this.legacyByLane.get(lane);
    if (seen === undefined) {
      if (this.legacyByLane.size >= maxLanes) this.legacyByLane.delete(this.legacyByLane.keys().next().value!);
      seen = new RecentDurations();
    }
    // Re-inserted, so the map's order is that of the last legacy check and the first is the stalest.
    this.legacyByLane.delete(lane);
    this.legacyByLane.set(lane, seen);
    seen.add(ms, at);
  }
}
