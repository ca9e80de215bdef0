import type { Clock } from '../clock.js';
import type { Config, IdentityMode } from '../config.js';
import type { Database, Queryable } from '../storage/database.js';

export type StoreStatus = 'active' | 'paused' | 'closed';
export const storeStatuses: readonly StoreStatus[] = ['active', 'paused', 'closed'];

export interface StoreContext {
  id: string;
  name: string;
  status: StoreStatus;
  identityMode: IdentityMode;
  verificationRequired: boolean;
  /** `auth.sign_in_with_code`: customers may sign in with a code sent to their identity. */
  signInWithCode: boolean;
  /** Whether a sign-in from a device not seen for 90 days sends the customer a notice. */
  signInNotices: boolean;
  /** `auth.passkeys`: customers may add passkeys and sign in with them. */
  passkeys: boolean;
  updatedAt: string;
}

interface StoreRow {
  id: string;
  name: string;
  status: StoreStatus;
  identity_mode: IdentityMode;
  settings: Record<string, unknown>;
  updated_at: Date;
}

// One store per deployment; its row always has this id.
const storeId = 'default';

function toStore(row: StoreRow): StoreContext {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    identityMode: row.identity_mode,
    verificationRequired: row.settings['auth.customer_verification_required'] === true,
    // Absent in stores made before the setting existed: off.
    signInWithCode: row.settings['auth.sign_in_with_code'] === true,
    // On unless an operator turned it off: stores made before the setting existed get notices too.
    signInNotices: row.settings['auth.sign_in_notices'] !== false,
    // Off unless an operator turned it on, like signing in with a code.
    passkeys: row.settings['auth.passkeys'] === true,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export async function loadStore(db: Queryable): Promise<StoreContext | null> {
  const rows = await db.query<StoreRow>(
    'SELECT id, name, status, identity_mode, settings, updated_at FROM store WHERE id = $1',
    [storeId],
  );
  return rows[0] === undefined ? null : toStore(rows[0]);
}

/** Creates the store row from configuration on first start; later starts leave it as the operator set it. */
export async function ensureStore(db: Queryable, clock: Clock, initial: Config['initialStore']): Promise<void> {
  const now = clock.now();
  await db.query(
    `INSERT INTO store (id, name, status, identity_mode, settings, created_at, updated_at)
     VALUES ($1, $2, 'active', $3, $4::text::jsonb, $5, $5) ON CONFLICT (id) DO NOTHING`,
    [
      storeId,
      initial.name,
      initial.identityMode,
      JSON.stringify({ 'auth.customer_verification_required': initial.verificationRequired }),
      now,
    ],
  );
}

export interface StoreChanges {
  name?: string;
  status?: StoreStatus;
  identityMode?: IdentityMode;
  verificationRequired?: boolean;
  signInWithCode?: boolean;
  signInNotices?: boolean;
  passkeys?: boolean;
}

export type StoreUpdateResult =
  | { ok: true; store: StoreContext }
  | { ok: false; reason: 'identity_mode_in_use'; customers: number }
  | { ok: false; reason: 'no_store' };

export interface StoreUpdateOptions {
  /** Switch the identity mode even while customers exist. */
  force?: boolean;
  /**
   * Counts the customers inside the update's transaction, after the store row is locked; needed to
   * switch the identity mode without `force`. Handed in (countCustomers of src/auth/tables/customers.ts)
   * because the customers table is the domain's, and the store sits below the domain.
   */
  countCustomers?: (tx: Queryable) => Promise<number>;
}

/** Applies operator changes. Switching the identity mode under existing customers needs `force`. */
export async function updateStore(
  db: Database,
  clock: Clock,
  changes: StoreChanges,
  { force = false, countCustomers }: StoreUpdateOptions = {},
): Promise<StoreUpdateResult> {
  return db.transaction(async (tx) => {
    const current = await tx.query<StoreRow>('SELECT identity_mode FROM store WHERE id = $1 FOR UPDATE', [storeId]);
    if (current[0] === undefined) return { ok: false, reason: 'no_store' };
    if (changes.identityMode !== undefined && changes.identityMode !== current[0].identity_mode && !force) {
      // A caller that forgot the count must not switch the mode under customers unchecked.
      if (countCustomers === undefined) throw new Error('switching the identity mode needs countCustomers or force');
      const customers = await countCustomers(tx);
      if (customers > 0) return { ok: false, reason: 'identity_mode_in_use', customers };
    }
    const settings = {
      ...(changes.verificationRequired === undefined
        ? {}
        : { 'auth.customer_verification_required': changes.verificationRequired }),
      ...(changes.signInWithCode === undefined ? {} : { 'auth.sign_in_with_code': changes.signInWithCode }),
      ...(changes.signInNotices === undefined ? {} : { 'auth.sign_in_notices': changes.signInNotices }),
      ...(changes.passkeys === undefined ? {} : { 'auth.passkeys': changes.passkeys }),
    };
    await tx.query(
      `UPDATE store SET name = COALESCE($2, name), status = COALESCE($3, status),
              identity_mode = COALESCE($4, identity_mode), settings = settings || $5::text::jsonb, updated_at = $6
        WHERE id = $1`,
      [
        storeId,
        changes.name ?? null,
        changes.status ?? null,
        changes.identityMode ?? null,
        JSON.stringify(settings),
        clock.now(),
      ],
    );
    return { ok: true, store: (await loadStore(tx))! };
  });
}

/** How long an instance may serve a store context before reading it again. */
export const storeRefreshMilliseconds = 2_000;

/**
 * The store context as every request sees it: read from the database at most every two seconds,
 * so a change made by the command line on any instance takes effect everywhere within that time.
 */
export class StoreCache {
  private cached: { store: StoreContext; loadedAtMs: number } | undefined;
  private loading: Promise<StoreContext> | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  async get(): Promise<StoreContext> {
    if (this.cached !== undefined && this.nowMs() - this.cached.loadedAtMs < storeRefreshMilliseconds) {
      return this.cached.store;
    }
    this.loading ??= this.reload().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  invalidate(): void {
    this.cached = undefined;
  }

  private async reload(): Promise<StoreContext> {
    const store = await loadStore(this.db);
    if (store === null) throw new Error('the store row is missing; run migrations and start the service once');
    this.cached = { store, loadedAtMs: this.nowMs() };
    return store;
  }
}
