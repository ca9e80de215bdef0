import { parseArgs } from 'node:util';
import { FieldError } from '../store/fields.js';

/** The command line's flags as node:util parses them, and the checks every command's flags share. */

export class UsageError extends Error {}

export function choice<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}`);
  return value as T;
}

export function readArguments(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      store: { type: 'string' },
      slug: { type: 'string' },
      name: { type: 'string' },
      host: { type: 'string', multiple: true },
      'identity-mode': { type: 'string' },
      'verification-required': { type: 'string' },
      'sign-in-with-code': { type: 'string' },
      'sign-in-notices': { type: 'string' },
      passkeys: { type: 'string' },
      'two-factor': { type: 'string' },
      'phone-countries': { type: 'string' },
      'bot-check': { type: 'string' },
      'bot-check-site-key': { type: 'string' },
      'bot-check-secret-file': { type: 'string' },
      'bot-check-on': { type: 'string' },
      'bot-check-verify-url': { type: 'string' },
      status: { type: 'string' },
      'allowed-origin': { type: 'string', multiple: true },
      'mail-from': { type: 'string' },
      'logo-url': { type: 'string' },
      'primary-colour': { type: 'string' },
      'accent-colour': { type: 'string' },
      'support-url': { type: 'string' },
      'sms-sender': { type: 'string' },
      'webauthn-rp-id': { type: 'string' },
      'cookie-domain': { type: 'string' },
      languages: { type: 'string' },
      'default-language': { type: 'string' },
      id: { type: 'string' },
      preset: { type: 'string' },
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      'client-secret-file': { type: 'string' },
      'private-key': { type: 'string' },
      'key-id': { type: 'string' },
      'team-id': { type: 'string' },
      scopes: { type: 'string' },
      confirm: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
      reason: { type: 'string' },
      until: { type: 'string' },
      // No defaults: a flag that was not given stays out of `values`, so it can be told apart.
      force: { type: 'boolean' },
      yes: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      customer: { type: 'string' },
      event: { type: 'string' },
      limit: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

export type Flags = ReturnType<typeof readArguments>['values'];
export type Flag = keyof Flags;

export function storeFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') throw new UsageError('--store needs a store slug (or id)');
  return trimmed;
}

/** A value checked by the store's field rules (store/fields.ts), its refusal worded after the flag. */
export function flagValue<I, T>(flag: string, check: (input: I) => T, input: I): T {
  try {
    return check(input);
  } catch (error) {
    if (error instanceof FieldError) throw new UsageError(`${flag} ${error.message}`);
    throw error;
  }
}
