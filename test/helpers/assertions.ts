import assert from 'node:assert/strict';
import type { Reply } from './harness.js';

/** A 422 validation failure that names `field` among its errors. */
export function assertFieldError(reply: Reply, field: string): void {
  assert.equal(reply.status, 422, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'validation_failed');
  const messages = reply.body.errors?.[field];
  assert.ok(Array.isArray(messages) && messages.length > 0, `errors.${field} in ${JSON.stringify(reply.body.errors)}`);
}

/** A problem answer of this status and code (the body shown when it is not). */
export function assertProblem(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.code, code);
}

/** A six-digit code that is surely not `code` (`step` apart, for several distinct wrong ones). */
export function otherThan(code: string, step = 1): string {
  return String((Number(code) + step) % 1_000_000).padStart(6, '0');
}

/** The six-digit code in a message's text, as a whole number, never digits inside a longer one. */
export function codeIn(text: string): string {
  const code = /(?<!\d)(\d{6})(?!\d)/.exec(text)?.[1];
  assert.ok(code !== undefined, `a six-digit code in: ${text}`);
  return code;
}
