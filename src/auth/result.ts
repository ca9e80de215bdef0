import type { FieldErrors } from './deps.js';

/**
 * The one shape in which a flow of the domain that a route calls (register, verify, log in, reset,
 * change, erase…) reports how it went. Of the command line's calls only `customer delete` is such
 * a flow; the others are table operations or keep outcomes of their own (`updateStore`'s `reason`,
 * `retryOutboxMessage`'s outcome string, `PruneError`). An expected failure is a value,
 * never an exception: `error` names its kind, and the edge maps each kind to one answer. Thrown
 * errors are only for what no caller can handle (a lost database), and become a 5xx.
 *
 * Two kinds of failure name the fields at fault, and always carry them: `invalid` (a value breaks
 * a rule) and `wrong_password` (the current password given to confirm a change is not the
 * password; the other fields' errors come with it, so one answer names every failing field).
 *
 * `Facts` are what a failure tells the audit trail (whose account, which passkey), never the
 * answer: the caller records them and answers every such failure alike.
 *
 * Table access is not a flow: a function that looks up one row (`findCustomerByIdentity`,
 * `findSessionCustomer`) answers `Row | null`, because "no such row" is an answer there, not a
 * failure. Work that cannot fail in a way the caller handles (sending a code behind a 202,
 * counting sessions) returns its plain value or nothing.
 */
export type Result<T, E extends string, Facts extends object = NoFacts> = Ok<T> | Failure<E, Facts>;

export interface Ok<T> {
  ok: true;
  value: T;
}

/** The failure kinds that name the fields at fault. */
export type FieldFailure = 'invalid' | 'wrong_password';

type NoFacts = Record<never, never>;

/** Distributes over `E`, so that checking `error` tells whether `fields` is there. */
export type Failure<E extends string, Facts extends object = NoFacts> = E extends FieldFailure
  ? { ok: false; error: E; fields: FieldErrors } & Facts
  : { ok: false; error: E } & Facts;

export function ok<T>(value: T): Ok<T> {
  return { ok: true, value };
}

/** A failure that names no field; `facts` go with it to the audit trail. */
export function fail<E extends string, Facts extends object = NoFacts>(
  error: Exclude<E, FieldFailure>,
  facts?: Facts,
): Failure<E, Facts> {
  return { ...facts, ok: false, error } as Failure<E, Facts>;
}

/** A failure naming the fields at fault, each with its messages. */
export function failFields<E extends FieldFailure>(error: E, fields: FieldErrors): Failure<E> {
  return { ok: false, error, fields } as Failure<E>;
}
