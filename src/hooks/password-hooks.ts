import type { Clock } from '../clock.js';
import { isLoopbackHost } from '../config.js';
import { acceptedKeys, seal, unseal, type Keys } from '../keys.js';
import { deleteInBatch, type Queryable, type StoreQueryable } from '../storage/database.js';
import { webhookSecretKey, webhookSecretRule } from './standard-webhooks.js';

/**
 * This module owns the `store_password_hooks` table: a store's old system, asked whether a password
 * is right for an imported account that came without a hash (see askPasswordHook).
 */

export interface PasswordHookView {
  url: string;
  created_at: string;
  updated_at: string;
}

/** The hook with its key opened, ready to sign a question. */
export interface PasswordHook {
  url: string;
  key: Buffer;
}

interface HookRow {
  url: string;
  created_at: Date;
  updated_at: Date;
}

/**
 * What is wrong with a hook's URL: it is https://, or http:// on a loopback address (a test, or an
 * old system beside the service); no credentials or fragment. Checked when saved and before each call.
 */
export function passwordHookUrlProblem(input: string): string | null {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return `${JSON.stringify(input)} is not a URL, such as https://old-shop.example/password-check`;
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '')
    return `${JSON.stringify(input)} must have no credentials or fragment`;
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname))) return null;
  return `${JSON.stringify(input)} must be https:// (http:// only on a loopback address, for testing)`;
}

export type SaveHookResult =
  | { ok: true; outcome: 'added' | 'replaced'; hook: PasswordHookView }
  | { ok: false; errors: { url?: string[]; secret?: string[] } };

/** Sets the store's hook (replacing the one it had); the secret is sealed and never read back out. */
export async function savePasswordHook(
  db: StoreQueryable,
  clock: Clock,
  keys: Pick<Keys, 'hooks'>,
  input: { url: string; secret: string },
): Promise<SaveHookResult> {
  const urlProblem = passwordHookUrlProblem(input.url);
  const secretProblem = webhookSecretKey(input.secret) === null ? `must be ${webhookSecretRule}` : null;
  if (urlProblem !== null || secretProblem !== null)
    return {
      ok: false,
      errors: {
        ...(urlProblem === null ? {} : { url: [urlProblem] }),
        ...(secretProblem === null ? {} : { secret: [secretProblem] }),
      },
    };
  const [row] = await db.query<HookRow & { added: boolean }>(
    `INSERT INTO store_password_hooks (store_id, url, sealed_secret, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (store_id) DO UPDATE SET url = EXCLUDED.url, sealed_secret = EXCLUDED.sealed_secret,
       updated_at = EXCLUDED.updated_at
     RETURNING url, created_at, updated_at, xmax = 0 AS added`,
    [db.storeId, input.url, seal(keys.hooks, input.secret), clock.now()],
  );
  return { ok: true, outcome: row!.added ? 'added' : 'replaced', hook: toView(row!) };
}

function toView(row: HookRow): PasswordHookView {
  return {
    url: row.url,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export async function findPasswordHook(db: StoreQueryable): Promise<PasswordHookView | null> {
  const [row] = await db.query<HookRow>(
    'SELECT url, created_at, updated_at FROM store_password_hooks WHERE store_id = $1',
    [db.storeId],
  );
  return row === undefined ? null : toView(row);
}

/**
 * The hook with its key, or null when the store has none. A secret sealed under an APP_SECRET
 * that is no longer accepted leaves the store without a working hook: an error the caller logs.
 */
export async function loadPasswordHook(db: StoreQueryable, keys: Keys): Promise<PasswordHook | null> {
  const [row] = await db.query<{ url: string; sealed_secret: string }>(
    'SELECT url, sealed_secret FROM store_password_hooks WHERE store_id = $1',
    [db.storeId],
  );
  if (row === undefined) return null;
  const opened = unseal(acceptedKeys(keys, 'hooks'), row.sealed_secret);
  const key = opened === undefined ? null : webhookSecretKey(opened.text);
  if (key === null)
    throw new Error(
      'the password hook secret was sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS',
    );
  return { url: row.url, key };
}

export async function removePasswordHook(db: StoreQueryable): Promise<boolean> {
  const rows = await db.query('DELETE FROM store_password_hooks WHERE store_id = $1 RETURNING 1', [db.storeId]);
  return rows.length > 0;
}

/** Part of erasing a deleted store (a store has one hook at most, so one batch does it). */
export async function deleteStorePasswordHooks(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'store_password_hooks', key: ['store_id'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
