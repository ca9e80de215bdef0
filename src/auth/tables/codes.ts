import { createHmac, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import { secondsBefore, type Clock } from '../../clock.js';
import { acceptedKeys, type Keys } from '../../keys.js';
import { deleteInBatch, type Queryable, type StoreQueryable } from '../../storage/database.js';

export type ChallengePurpose = 'verification' | 'password_reset' | 'sign_in' | 'identity_change';

export const codeLifetimeSeconds = 10 * 60;
/**
 * An invitation's set-password code (a reset code sent unasked) waits in an inbox until its
 * customer comes back to the store: a week. Guessing it is as hard as any code (five tries).
 */
export const invitationLifetimeSeconds = 7 * 24 * 60 * 60;
export const maxCodeAttempts = 5;

export interface CodeDeps {
  clock: Clock;
  /** `codes` makes new MACs; the previous secrets' keys are accepted when checking. */
  keys: Pick<Keys, 'codes' | 'previous'>;
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
  tx: StoreQueryable,
  deps: CodeDeps,
  customerId: string,
  purpose: ChallengePurpose,
  /** For `identity_change`: the normalized identity the code would switch the account to. */
  newIdentityValue: string | null = null,
  lifetimeSeconds = codeLifetimeSeconds,
): Promise<IssuedChallenge> {
  const now = deps.clock.now();
  await voidLiveChallenges(tx, deps.clock, customerId, purpose);
  const challengeId = randomUUID();
  const code = generateCode();
  const expiresAt = new Date(now.getTime() + lifetimeSeconds * 1000);
  await tx.query(
    `INSERT INTO challenges (store_id, id, customer_id, purpose, code_mac, created_at, expires_at, new_identity_value)
     VALUES ($8, $1, $2, $3, $4, $5, $6, $7)`,
    [
      challengeId,
      customerId,
      purpose,
      codeMac(deps.keys.codes, challengeId, code),
      now,
      expiresAt,
      newIdentityValue,
      tx.storeId,
    ],
  );
  return { challengeId, code, expiresAt };
}

/** Whether the customer has a code of the purpose that can still be used. */
export async function hasLiveChallenge(
  db: StoreQueryable,
  clock: Clock,
  customerId: string,
  purpose: ChallengePurpose,
): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM challenges WHERE store_id = $1 AND customer_id = $2 AND purpose = $3
        AND consumed_at IS NULL AND voided_at IS NULL AND expires_at > $4 LIMIT 1`,
    [db.storeId, customerId, purpose, clock.now()],
  );
  return rows.length > 0;
}

/**
 * Voids the customer's live codes: of one purpose (a new code replaces the old), or of every
 * purpose (a credential or the identity changed, so no code sent before it may act after it).
 */
export async function voidLiveChallenges(
  tx: StoreQueryable,
  clock: Clock,
  customerId: string,
  purpose: ChallengePurpose | null = null,
): Promise<void> {
  await tx.query(
    `UPDATE challenges SET voided_at = $3
      WHERE store_id = $4 AND customer_id = $1 AND ($2::text IS NULL OR purpose = $2)
        AND consumed_at IS NULL AND voided_at IS NULL`,
    [customerId, purpose, clock.now(), tx.storeId],
  );
}

/**
 * Spends one attempt on the live code and consumes it when `code` is right. The attempt is
 * counted before the comparison and both steps are conditional updates, so parallel guesses can
 * neither exceed the attempt limit nor use one code twice. With no customer, the same attempt
 * query (matching nothing), the same MAC work and the same commit are done, so an unknown
 * identity costs what a wrong code costs.
 */
export async function consumeChallenge(
  tx: StoreQueryable,
  deps: CodeDeps,
  customerId: string | null,
  purpose: ChallengePurpose,
  code: string,
): Promise<boolean> {
  return (await consumeChallengeOf(tx, deps, customerId, purpose, code)) !== null;
}

export interface ConsumedChallenge {
  challengeId: string;
  newIdentityValue: string | null;
}

/** As consumeChallenge, answering with the consumed code's id and pending identity, or null. */
export async function consumeChallengeOf(
  tx: StoreQueryable,
  deps: CodeDeps,
  customerId: string | null,
  purpose: ChallengePurpose,
  code: string,
): Promise<ConsumedChallenge | null> {
  const now = deps.clock.now();
  const [attempt] = await tx.query<{ id: string; code_mac: string }>(
    `UPDATE challenges SET attempts = attempts + 1
      WHERE store_id = $5
        AND id = (SELECT id FROM challenges
                   WHERE store_id = $5 AND customer_id = $1 AND purpose = $2
                     AND consumed_at IS NULL AND voided_at IS NULL AND expires_at > $3
                   ORDER BY created_at DESC LIMIT 1)
        AND attempts < $4 AND consumed_at IS NULL
      RETURNING id, code_mac`,
    [customerId ?? randomUUID(), purpose, now, maxCodeAttempts, tx.storeId],
  );
  const challengeId = attempt?.id ?? randomUUID();
  const expected = Buffer.from(attempt?.code_mac ?? codeMac(deps.keys.codes, challengeId, generateCode()));
  // A code made before APP_SECRET was rotated carries the MAC of a previous key. Every accepted
  // key is tried, with no early exit, so the work does not depend on which key (if any) matches.
  let matches = false;
  for (const key of acceptedKeys(deps.keys, 'codes')) {
    const given = Buffer.from(codeMac(key, challengeId, code));
    matches = (expected.length === given.length && timingSafeEqual(expected, given)) || matches;
  }
  if (attempt === undefined || !matches) {
    // A counted wrong attempt wrote a row and an unknown identity wrote none; with a synchronous
    // commit the first would wait for the WAL flush (about a millisecond) and tell the two apart.
    // Both refusals commit without waiting. A database crash in the next few hundred
    // milliseconds can lose that one attempt's count, never a consumed code.
    await tx.query('SET LOCAL synchronous_commit = off');
    return null;
  }
  const [consumed] = await tx.query<{ new_identity_value: string | null }>(
    `UPDATE challenges SET consumed_at = $2
      WHERE store_id = $3 AND id = $1 AND consumed_at IS NULL RETURNING new_identity_value`,
    [challengeId, now, tx.storeId],
  );
  return consumed === undefined ? null : { challengeId, newIdentityValue: consumed.new_identity_value };
}

/** Deletes every code of the customer, live or finished (account deletion). */
export async function deleteCustomerChallenges(tx: StoreQueryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM challenges WHERE store_id = $2 AND customer_id = $1', [customerId, tx.storeId]);
}

/**
 * Deletes up to `limit` codes that ended (expired, used or replaced) at least `retentionSeconds`
 * ago and returns how many; a code killed by too many tries ends at its expiry. A code stays
 * while a message that still holds its sealed body points at it: the dispatcher looks at the
 * code to drop such a message instead of sending a dead code.
 */
export async function deleteFinishedChallenges(
  db: Queryable,
  clock: Clock,
  retentionSeconds: number,
  limit: number,
): Promise<number> {
  const cutoff = secondsBefore(clock.now(), retentionSeconds);
  return deleteInBatch(
    db,
    {
      table: 'challenges',
      key: ['store_id', 'id'],
      where: `LEAST(expires_at, consumed_at, voided_at) <= $1
          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.store_id = challenges.store_id
                             AND o.challenge_id = challenges.id AND o.sealed_body IS NOT NULL)`,
    },
    [cutoff],
    limit,
  );
}
