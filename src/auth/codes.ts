import { createHmac, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Keys } from '../keys.js';
import type { Queryable } from '../storage/database.js';

export type ChallengePurpose = 'verification' | 'password_reset';

export const codeLifetimeSeconds = 10 * 60;
export const maxCodeAttempts = 5;

export interface CodeDeps {
  clock: Clock;
  keys: Pick<Keys, 'codes'>;
}

/** Uniform over 000000–999999 from the operating system's CSPRNG. */
export function generateCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

// Keyed by the challenge id too, so one code's MAC says nothing about another challenge.
function codeMac(key: Buffer, challengeId: string, code: string): string {
  return createHmac('sha256', key).update(`${challengeId}:${code}`).digest('base64url');
}

export interface IssuedChallenge {
  challengeId: string;
  code: string;
  expiresAt: Date;
}

/** A new code for the purpose; every earlier live code of that purpose stops working. */
export async function issueChallenge(
  tx: Queryable,
  deps: CodeDeps,
  customerId: string,
  purpose: ChallengePurpose,
): Promise<IssuedChallenge> {
  const now = deps.clock.now();
  await tx.query(
    `UPDATE challenges SET voided_at = $3
      WHERE customer_id = $1 AND purpose = $2 AND consumed_at IS NULL AND voided_at IS NULL`,
    [customerId, purpose, now],
  );
  const challengeId = randomUUID();
  const code = generateCode();
  const expiresAt = new Date(now.getTime() + codeLifetimeSeconds * 1000);
  await tx.query(
    `INSERT INTO challenges (id, customer_id, purpose, code_mac, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [challengeId, customerId, purpose, codeMac(deps.keys.codes, challengeId, code), now, expiresAt],
  );
  return { challengeId, code, expiresAt };
}

/**
 * Spends one attempt on the live code and consumes it when `code` is right. The attempt is
 * counted before the comparison and both steps are conditional updates, so parallel guesses can
 * neither exceed the attempt limit nor use one code twice. With no customer, the same attempt
 * query (matching nothing) and the same MAC work are done, so an unknown identity costs what a
 * wrong code costs.
 */
export async function consumeChallenge(
  tx: Queryable,
  deps: CodeDeps,
  customerId: string | null,
  purpose: ChallengePurpose,
  code: string,
): Promise<boolean> {
  const now = deps.clock.now();
  const [attempt] = await tx.query<{ id: string; code_mac: string }>(
    `UPDATE challenges SET attempts = attempts + 1
      WHERE id = (SELECT id FROM challenges
                   WHERE customer_id = $1 AND purpose = $2
                     AND consumed_at IS NULL AND voided_at IS NULL AND expires_at > $3
                   ORDER BY created_at DESC LIMIT 1)
        AND attempts < $4 AND consumed_at IS NULL
      RETURNING id, code_mac`,
    [customerId ?? randomUUID(), purpose, now, maxCodeAttempts],
  );
  const challengeId = attempt?.id ?? randomUUID();
  const expected = Buffer.from(attempt?.code_mac ?? codeMac(deps.keys.codes, challengeId, generateCode()));
  const given = Buffer.from(codeMac(deps.keys.codes, challengeId, code));
  const matches = expected.length === given.length && timingSafeEqual(expected, given);
  if (attempt === undefined || !matches) return false;
  const consumed = await tx.query(
    'UPDATE challenges SET consumed_at = $2 WHERE id = $1 AND consumed_at IS NULL RETURNING id',
    [challengeId, now],
  );
  return consumed.length === 1;
}
