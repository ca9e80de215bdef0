import type { Queryable } from '../../storage/database.js';

/**
 * The one owner of `breached_hashes`: the local copy of the breach corpus, the SHA-1 of each
 * breached password as 20 bytes under the primary key. It belongs to the deployment, not to a store.
 * Hashes travel as hex text and are decoded in SQL, so nothing depends on how a driver binds bytea.
 */

/** Left out of backups: a public corpus, loaded again from its file, and up to tens of gigabytes. */
export const breachedHashesTable = 'breached_hashes';

export interface LocalBreachAnswer {
  /** The table has rows: a local copy was loaded. */
  loaded: boolean;
  breached: boolean;
}

/** One round trip, two index reads: whether a copy is loaded at all, and whether it has the hash. */
export async function lookUpBreachedHash(db: Pick<Queryable, 'query'>, sha1Hex: string): Promise<LocalBreachAnswer> {
  const [row] = await db.query<LocalBreachAnswer>(
    `SELECT EXISTS (SELECT 1 FROM breached_hashes) AS loaded,
            EXISTS (SELECT 1 FROM breached_hashes WHERE sha1 = decode($1, 'hex')) AS breached`,
    [sha1Hex],
  );
  return { loaded: row?.loaded === true, breached: row?.breached === true };
}

/**
 * Adds a batch of hashes (40 hex digits each) in one statement; those already present are left as
 * they are, so a load run again, or resumed after a failure, adds only what is missing. Returns
 * how many were new.
 */
export async function insertBreachedHashes(
  db: Pick<Queryable, 'query'>,
  sha1Hexes: readonly string[],
): Promise<number> {
  if (sha1Hexes.length === 0) return 0;
  const rows = await db.query<{ n: number }>(
    `WITH added AS (
       INSERT INTO breached_hashes (sha1) SELECT decode(h, 'hex') FROM unnest($1::text[]) AS u (h)
       ON CONFLICT DO NOTHING RETURNING 1
     ) SELECT count(*)::int AS n FROM added`,
    [sha1Hexes],
  );
  return rows[0]?.n ?? 0;
}
