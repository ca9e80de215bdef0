import type { Clock } from '../clock.js';
import type { IdentityMode } from '../config.js';
import type { Channel } from '../delivery/message.js';
import type { Keys } from '../keys.js';
import type { Database } from '../storage/database.js';
import type { PasswordHasher } from './password.js';

/** What the auth flows may touch. Each flow picks the parts it uses. */
export interface AuthDeps {
  db: Database;
  clock: Clock;
  hasher: PasswordHasher;
  keys: Keys;
  /** Country calling codes a phone store registers (empty: all); a brake on SMS pumping. */
  allowedCallingCodes: readonly string[];
  /** Called after a transaction that wrote outbox messages has committed. */
  messagesQueued: () => void;
}

export type FieldErrors = Record<string, string[]>;

export function addFieldError(errors: FieldErrors, field: string, message: string): void {
  (errors[field] ??= []).push(message);
}

export function channelFor(mode: IdentityMode): Channel {
  return mode === 'email' ? 'email' : 'sms';
}
