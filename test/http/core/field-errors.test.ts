import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness } from '../../helpers/harness.js';

const phoneStore = { STORE_IDENTITY_MODE: 'phone' };

/** A body and the exact fields its 422 answer must name: every failing one, and no other. */
const cases: Array<{ name: string; path: string; body: unknown; fields: string[]; env?: Record<string, string> }> = [
  { name: 'register {}', path: 'register', body: {}, fields: ['email', 'name', 'password', 'password_confirmation'] },
  {
    name: 'register {} on a phone store',
    path: 'register',
    body: {},
    env: phoneStore,
    fields: ['name', 'password', 'password_confirmation', 'phone'],
  },
  {
    name: 'register with every field of the wrong type',
    path: 'register',
    body: { name: 1, email: true, password: [], password_confirmation: {} },
    fields: ['email', 'name', 'password', 'password_confirmation'],
  },
  {
    name: 'register with a wrong-typed name and invalid text in the others',
    path: 'register',
    body: { name: 7, email: 'not an email', password: 'short', password_confirmation: 'other' },
    fields: ['email', 'name', 'password', 'password_confirmation'],
  },
  {
    name: 'register with a blank name and a wrong-typed email',
    path: 'register',
    body: { name: ' ', email: 5, password: 'analytical engine 1843', password_confirmation: 'analytical engine 1843' },
    fields: ['email', 'name'],
  },
  {
    name: 'register with a phone on an email store and a missing confirmation',
    path: 'register',
    body: { name: 'Ada', phone: '+14155550123', password: 'analytical engine 1843' },
    fields: ['email', 'password_confirmation', 'phone'],
  },
  { name: 'verify {}', path: 'verify', body: {}, fields: ['code', 'identity'] },
  { name: 'verify wrong types', path: 'verify', body: { identity: 1, code: 123456 }, fields: ['code', 'identity'] },
  { name: 'resend {}', path: 'verification/resend', body: {}, fields: ['identity'] },
  { name: 'resend wrong type', path: 'verification/resend', body: { identity: null }, fields: ['identity'] },
  { name: 'forgot {}', path: 'password/forgot', body: {}, fields: ['identity'] },
  { name: 'forgot wrong type', path: 'password/forgot', body: { identity: ['a'] }, fields: ['identity'] },
  { name: 'login {}', path: 'login', body: {}, fields: ['identity', 'password'] },
  { name: 'login wrong types', path: 'login', body: { identity: {}, password: 8 }, fields: ['identity', 'password'] },
  {
    name: 'reset {}',
    path: 'password/reset',
    body: {},
    fields: ['code', 'identity', 'password', 'password_confirmation'],
  },
  {
    name: 'reset wrong types',
    path: 'password/reset',
    body: { identity: 1, code: 2, password: 3, password_confirmation: 4 },
    fields: ['code', 'identity', 'password', 'password_confirmation'],
  },
  {
    name: 'reset with a malformed code and a weak, unmatched password',
    path: 'password/reset',
    body: { identity: 'ada@example.com', code: '12', password: 'short', password_confirmation: 'other' },
    fields: ['code', 'password', 'password_confirmation'],
  },
];

describe('field errors', () => {
  const harness = useHarness();

  for (const { name, path, body, fields, env } of cases) {
    test(`${name} answers 422 naming ${fields.join(', ')}`, async () => {
      const t = await harness.start({ env: env ?? {} });
      const reply = await t.post(`${auth}/${path}`, body);
      assert.equal(reply.status, 422, JSON.stringify(reply.body));
      assert.equal(reply.body.code, 'validation_failed');
      assert.deepEqual(Object.keys(reply.body.errors).sort(), fields, JSON.stringify(reply.body.errors));
    });
  }

  test('a password with letters and no number is told it lacks a number, and only that', async () => {
    const t = await harness.start();
    const reply = await t.post(`${auth}/register`, {
      name: 'Ada',
      email: 'ada@example.com',
      password: 'analytical engine',
      password_confirmation: 'analytical engine',
    });
    assert.equal(reply.body.code, 'validation_failed');
    assert.deepEqual(reply.body.errors, { password: ['Must contain at least one number.'] });
  });

  test('a password with numbers and no letter is told it lacks a letter, and only that', async () => {
    const t = await harness.start();
    const reply = await t.post(`${auth}/register`, {
      name: 'Ada',
      email: 'ada@example.com',
      password: '1843 1815 1852',
      password_confirmation: '1843 1815 1852',
    });
    assert.equal(reply.body.code, 'validation_failed');
    assert.deepEqual(reply.body.errors, { password: ['Must contain at least one letter.'] });
  });
});
