import { createHmac, randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Clock } from '../../clock.js';
import { acceptedKeys, seal, unseal, type Keys } from '../../keys.js';
import type { StoreQueryable } from '../../storage/database.js';
import type { FieldErrors } from '../deps.js';
import { findSecondStep, useRecoveryCode, useStep } from '../tables/second-steps.js';
import { fieldPhrase } from './field-phrase.js';

/**
 * The second step's secrets and codes: TOTP (RFC 6238: SHA-1, six digits, 30-second steps, the
 * authenticator apps' defaults) by otpauth, and recovery codes. The secret is sealed at rest and
 * recovery codes are kept as MACs, both under a key of their own (keys.ts).
 */

const period = 30;

/** A new random secret (160 bits, as RFC 4226 recommends), base32 as authenticator apps take it. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

export function sealTotpSecret(keys: Pick<Keys, 'secondSteps'>, secret: string): string {
  return seal(keys.secondSteps, secret);
}

function totpOf(secret: string, issuer = '', label = ''): TOTP {
  return new TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period, secret: Secret.fromBase32(secret) });
}

/** The `otpauth://` URI an app scans: the store's name as the issuer, the identity as the label. */
export function totpUri(secret: string, issuer: string, label: string): string {
  return totpOf(secret, issuer, label).toString();
}

/**
 * The step a code belongs to when it is the secret's code for this moment or one step either side
 * (clock drift), else null. The caller accepts a step only once (useStep).
 */
export function totpStep(keys: Keys, sealedSecret: string, code: string, now: Date): number | null {
  const opened = unseal(acceptedKeys(keys, 'secondSteps'), sealedSecret);
  if (opened === undefined || !/^\d{6}$/.test(code)) return null;
  const delta = totpOf(opened.text).validate({ token: code, timestamp: now.getTime(), window: 1 });
  return delta === null ? null : Math.floor(now.getTime() / 1000 / period) + delta;
}

// No 0/o, 1/l/i: a code is read off paper. 31 letters, ten of them: 49 bits a code.
const recoveryAlphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
export const recoveryCodeCount = 10;

/** Ten new recovery codes, `xxxxx-xxxxx`, shown once. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: recoveryCodeCount }, () => {
    const characters = Array.from({ length: 10 }, () => recoveryAlphabet[randomInt(recoveryAlphabet.length)]);
    return `${characters.slice(0, 5).join('')}-${characters.slice(5).join('')}`;
  });
}

/** What a recovery code is kept as: a MAC of it, its case, spaces and hyphens aside. */
function recoveryMac(key: Buffer, code: string): Buffer {
  const normalized = code.toLowerCase().replace(/[\s-]/g, '');
  return createHmac('sha256', key).update(`recovery-code.${normalized}`).digest();
}

export function recoveryHashes(keys: Pick<Keys, 'secondSteps'>, codes: readonly string[]): Buffer[] {
  return codes.map((code) => recoveryMac(keys.secondSteps, code));
}

/** The MACs a given recovery code may be kept as: under the current key and each previous one. */
export function recoveryCandidates(keys: Keys, code: string): Buffer[] {
  return acceptedKeys(keys, 'secondSteps').map((key) => recoveryMac(key, code));
}

/** A code given where either may come (turning it off): six digits are the app's, anything else a recovery code. */
export function secondStepOf(code: string): SecondStepAnswer {
  return /^\d{6}$/.test(code) ? { code } : { recoveryCode: code };
}

/**
 * Takes a second step against the customer's confirmed one, in the caller's transaction with the
 * customer row locked: a code of the app whose step is later than any accepted before (each step
 * once), or a recovery code, spent. What was accepted, or null.
 */
export async function takeSecondStep(
  tx: StoreQueryable,
  deps: { keys: Keys; clock: Clock },
  customerId: string,
  given: SecondStepAnswer,
): Promise<'totp' | 'recovery_code' | null> {
  const row = await findSecondStep(tx, customerId);
  if (row === null || row.confirmed_at === null) return null;
  if ('recoveryCode' in given)
    return (await useRecoveryCode(tx, customerId, recoveryCandidates(deps.keys, given.recoveryCode))) === null
      ? null
      : 'recovery_code';
  const step = totpStep(deps.keys, row.sealed_secret, given.code, deps.clock.now());
  return step !== null && (await useStep(tx, customerId, step)) ? 'totp' : null;
}

/** A second step as given: the app's six digits, or a recovery code. */
export type SecondStepAnswer = { code: string } | { recoveryCode: string };

/** A refused second step, on its own field unless the caller names one (where either code may come). */
export function secondStepRefused(
  given: SecondStepAnswer,
  field = 'recoveryCode' in given ? 'recovery_code' : 'code',
): FieldErrors {
  return { [field]: [fieldPhrase('recoveryCode' in given ? 'recovery_code' : 'second_step_code')] };
}
