import type { Params, Phrase } from '../i18n/strings.js';
import { fieldPhrase } from './rules/field-phrase.js';
import type { Clock } from '../clock.js';
import type { IdentityMode } from '../config.js';
import type { Channel } from '../delivery/message.js';
import type { Keys } from '../keys.js';
import type { StoreDatabase } from '../storage/database.js';
import type { OldPasswordQuestion } from '../hooks/ask-password-hook.js';
import type { PasswordHasher } from './rules/password.js';
import type { BreachedPasswords } from './rules/breached.js';

/**
 * What the auth flows may touch. Each flow names the parts it uses (`Pick<AuthDeps, …>`), so a
 * reader sees at its signature whether it hashes, writes messages or reads the store's settings,
 * and a test hands it just those.
 */
export interface AuthDeps {
  /** The request's store: every table statement is scoped to it. */
  db: StoreDatabase;
  clock: Clock;
  hasher: PasswordHasher;
  keys: Keys;
  /** Country calling codes a phone store registers (empty: all); a brake on SMS pumping. */
  allowedCallingCodes: readonly string[];
  /** Called after a transaction that wrote outbox messages has committed. */
  messagesQueued: () => void;
  /** Called after a transaction that wrote webhook events has committed. */
  eventsRecorded: () => void;
  /**
   * The store's old system, which can tell whether a password is right for an account its import
   * brought without a hash (the password migration hook); null when the store has none.
   */
  passwordHook: (db: StoreDatabase) => Promise<OldPasswordCheck | null>;
  /** Whether a new password is in the breach corpus (see rules/breached.ts); false when none is configured. */
  breachedPasswords: BreachedPasswords;
  /**
   * Told when a password an import brought, right at sign-in and re-hashed there, is in the breach
   * corpus: the sign-in goes on, and the deployment hears of it (a log line an operator acts on).
   */
  legacyPasswordBreached: (customerId: string) => void;
}

/** True only when the old system said the password is right; false for any other answer or none. */
export type OldPasswordCheck = (question: OldPasswordQuestion) => Promise<boolean>;

/**
 * What a flow that queues codes or messages needs: the database, the clock, the keys that MAC the
 * codes and seal the bodies, and the nudges to the dispatchers (messages, webhook events) once the
 * transaction has committed.
 */
export type MessagingDeps = Pick<AuthDeps, 'db' | 'clock' | 'keys' | 'messagesQueued' | 'eventsRecorded'>;

/** What is wrong with each refused field, as phrases (`field.*` strings) the edge writes in the customer's language. */
export type FieldErrors = Record<string, Phrase[]>;

/** Notes `field.<name>` (with its parameters) against a field. */
export function addFieldError(errors: FieldErrors, field: string, name: string, params?: Params): void {
  (errors[field] ??= []).push(fieldPhrase(name, params));
}

export function channelFor(mode: IdentityMode): Channel {
  return mode === 'email' ? 'email' : 'sms';
}
