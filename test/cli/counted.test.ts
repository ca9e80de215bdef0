import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { counted } from '../../src/cli/counted.js';

describe('counts in the command line’s messages', () => {
  test('one is singular; zero, many and fractions are plural', () => {
    assert.equal(counted(1, 'customer'), '1 customer');
    assert.equal(counted(2, 'customer'), '2 customers');
    assert.equal(counted(0, 'row'), '0 rows');
    assert.equal(counted(100_000, 'row'), '100000 rows');
    assert.equal(counted(1, 'match', 'matches'), '1 match');
    assert.equal(counted(3, 'match', 'matches'), '3 matches');
  });
});
