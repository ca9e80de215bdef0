import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CheckFloors } from '../../src/auth/rules/check-floors.js';

/**
 * The floors that keep a legacy hash's check from telling an imported account apart by its time:
 * each kind of check is held to a recent duration of the other kind, in its store's lane.
 */

const dayMs = 24 * 60 * 60 * 1000;

function floorsAt() {
  let nowMs = 1_000;
  const floors = new CheckFloors(() => nowMs);
  return { floors, advance: (ms: number) => (nowMs += ms) };
}

describe('check floors', () => {
  test('before any check there is no floor', () => {
    const { floors } = floorsAt();
    assert.equal(floors.floorMs('store-a', true), 0);
    assert.equal(floors.floorMs('store-a', false), 0);
  });

  test('a legacy check is held to a recent argon2 check’s duration, drawn from them', () => {
    const { floors } = floorsAt();
    for (const ms of [20, 22, 24]) floors.record('store-b', false, ms);
    const drawn = new Set(Array.from({ length: 200 }, () => floors.floorMs('store-a', true)));
    assert.deepEqual([...drawn].sort(), [20, 22, 24]);
  });

  test('an argon2 check in a store whose legacy checks took longer is held to one of them; other stores are not', () => {
    const { floors } = floorsAt();
    for (const ms of [80, 90]) floors.record('store-a', true, ms);
    const drawn = new Set(Array.from({ length: 200 }, () => floors.floorMs('store-a', false)));
    assert.deepEqual([...drawn].sort(), [80, 90]);
    assert.equal(floors.floorMs('store-b', false), 0);
  });

  test('a legacy check is held to argon2’s durations only, never to its own kind’s', () => {
    const { floors } = floorsAt();
    floors.record('store-a', false, 25);
    for (let i = 0; i < 32; i += 1) floors.record('store-a', true, 90);
    assert.equal(floors.floorMs('store-a', true), 25);
  });

  test('only the recent durations count: the oldest give way after 32', () => {
    const { floors } = floorsAt();
    floors.record('store-a', true, 500);
    for (let i = 0; i < 32; i += 1) floors.record('store-a', true, 60);
    const drawn = new Set(Array.from({ length: 200 }, () => floors.floorMs('store-a', false)));
    assert.deepEqual([...drawn], [60]);
  });

  test('a store without a legacy check for a day has no floor left', () => {
    const { floors, advance } = floorsAt();
    floors.record('store-a', true, 80);
    advance(dayMs - 1);
    assert.equal(floors.floorMs('store-a', false), 80);
    advance(2);
    assert.equal(floors.floorMs('store-a', false), 0);
  });

  test('a failed check (no duration) records nothing', () => {
    const { floors } = floorsAt();
    floors.record('store-a', true, 0);
    floors.record('store-a', false, 0);
    assert.equal(floors.floorMs('store-a', false), 0);
    assert.equal(floors.floorMs('store-a', true), 0);
  });
});
