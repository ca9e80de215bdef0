import type { Clock } from '../../src/clock.js';

export class FakeClock implements Clock {
  private current: number;

  constructor(start = Date.parse('2026-01-15T10:00:00Z')) {
    this.current = start;
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(seconds: number): void {
    this.current += seconds * 1000;
  }
}
