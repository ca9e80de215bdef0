import { fieldPhrase } from '../../src/auth/rules/field-phrase.js';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fail, failFields, ok, type Result } from '../../src/auth/result.js';

type Renamed = Result<string, 'invalid' | 'gone', { customerId: string | null }>;

/** What a caller reads: the value, or the failure's kind, and its fields exactly when the kind names fields. */
function describeResult(result: Renamed): string {
  if (result.ok) return `value ${result.value}`;
  if (result.error === 'invalid') return `invalid ${Object.keys(result.fields).join(',')}`;
  return `${result.error} of ${result.customerId ?? 'nobody'}`;
}

describe('the Result shape of the domain flows', () => {
  test('ok carries the value, fail the kind and its audit facts, failFields the kind and its fields', () => {
    assert.deepEqual(ok('Ada'), { ok: true, value: 'Ada' });
    assert.deepEqual(fail('gone'), { ok: false, error: 'gone' });
    assert.deepEqual(fail('gone', { customerId: 'c1' }), { ok: false, error: 'gone', customerId: 'c1' });
    assert.deepEqual(failFields('invalid', { name: [fieldPhrase('required')] }), {
      ok: false,
      error: 'invalid',
      fields: { name: [{ key: 'field.required' }] },
    });
  });

  test('a caller tells the kinds apart by error alone', () => {
    assert.equal(describeResult(ok('Ada')), 'value Ada');
    assert.equal(describeResult(fail('gone', { customerId: 'c1' })), 'gone of c1');
    assert.equal(
      describeResult({ ...failFields('invalid', { name: [], email: [] }), customerId: null }),
      'invalid name,email',
    );
  });

  test('facts cannot overwrite the kind of a failure', () => {
    const facts = { customerId: null, error: 'something else', ok: true } as unknown as { customerId: null };
    assert.deepEqual(fail('gone', facts), { ok: false, error: 'gone', customerId: null });
  });

  test('a kind that names fields cannot be made without them', () => {
    // @ts-expect-error `invalid` always carries its fields: fail() refuses it, so typechecking fails without this line's directive.
    const made = fail<'invalid'>('invalid');
    assert.equal(made.ok, false);
  });
});
