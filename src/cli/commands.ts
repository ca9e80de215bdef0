import { listAudit, writeAuditEntry, type AuditEvent } from '../audit.js';
import { eraseAccount } from '../auth/flows/erasure.js';
import type { Keys } from '../keys.js';
import type { Clock } from '../clock.js';
import { defaultRetention, deliveryProblem, type Config, type RetentionSettings } from '../config.js';
import { countCustomers, findCustomerByIdentity, toCustomer, type CustomerRow } from '../auth/tables/customers.js';
import { countLiveCustomerSessions, listCustomerSessions, revokeCustomerSessions } from '../auth/tables/sessions.js';
import { listPasskeys, removePasskey } from '../auth/tables/passkeys.js';
import { parseIdentity } from '../auth/rules/identity.js';
import { listOutbox, retryOutboxMessage, type OutboxStatus } from '../delivery/outbox.js';
import { prune, PruneError } from '../janitor.js';
import type { Database } from '../storage/database.js';
import { migrate } from '../storage/migrations.js';
import { loadStore, updateStore, type StoreChanges } from '../store/store.js';
import { counted } from './counted.js';

/** What an operator can ask for. */
export type AdminCommand =
  | { name: 'migrate' }
  | { name: 'store.show' }
  | { name: 'store.set'; changes: StoreChanges; force: boolean }
  | { name: 'customer.show'; identity: string }
  | { name: 'customer.delete'; identity: string }
  | { name: 'customer.sessions'; identity: string }
  | { name: 'customer.revoke-sessions'; identity: string }
  | { name: 'customer.passkeys'; identity: string }
  | { name: 'customer.remove-passkey'; identity: string; id: string }
  | { name: 'outbox.list'; status?: OutboxStatus }
  | { name: 'outbox.retry'; id: string }
  | { name: 'audit.list'; identity?: string; event?: AuditEvent; limit?: number }
  | { name: 'prune' };

export interface AdminResult {
  ok: boolean;
  /** Printed as JSON on success. */
  output?: unknown;
  /** Printed on failure. */
  error?: string;
}

export interface AdminDeps {
  db: Database;
  clock: Clock;
  /** What `prune` keeps; the defaults when not given. */
  retention?: RetentionSettings;
  /**
   * The command's own configuration, taken to be the service's (the same environment, as with
   * `docker exec`): the transport check of `store set` can only be as right as that.
   */
  config: Pick<Config, 'mail' | 'smsWebhook' | 'deliveryLogAllowed'>;
  /** The deployment's keys, to seal the notice `customer delete` queues; that command needs them. */
  keys?: Keys;
}

function describeStore(store: NonNullable<Awaited<ReturnType<typeof loadStore>>>) {
  return {
    id: store.id,
    name: store.name,
    status: store.status,
    identity_mode: store.identityMode,
    settings: {
      'auth.customer_verification_required': store.verificationRequired,
      'auth.sign_in_with_code': store.signInWithCode,
      'auth.sign_in_notices': store.signInNotices,
      'auth.passkeys': store.passkeys,
    },
    updated_at: store.updatedAt,
  };
}

/** The customer an operator named, or the error line to print. */
async function customerNamed(db: Database, identity: string): Promise<CustomerRow | string> {
  const store = await loadStore(db);
  if (store === null) return 'no store yet: start the service once';
  const row = await findCustomerByIdentity(db, parseIdentity(store.identityMode, identity));
  return row ?? `no customer with ${store.identityMode} ${identity}`;
}

export async function runAdminCommand(deps: AdminDeps, command: AdminCommand): Promise<AdminResult> {
  const { db, clock } = deps;
  switch (command.name) {
    case 'migrate':
      return { ok: true, output: { applied: await migrate(db) } };
    case 'store.show': {
      const store = await loadStore(db);
      return store === null ? noStore() : { ok: true, output: describeStore(store) };
    }
    case 'store.set':
      return setStore(deps, command);
    case 'customer.show': {
      const row = await customerNamed(db, command.identity);
      if (typeof row === 'string') return { ok: false, error: row };
      const activeSessions = await countLiveCustomerSessions(db, clock, row.id);
      return { ok: true, output: { ...toCustomer(row), active_sessions: activeSessions } };
    }
    case 'customer.delete':
      return deleteCustomer(deps, command.identity);
    case 'customer.sessions':
    case 'customer.revoke-sessions':
    case 'customer.passkeys':
    case 'customer.remove-passkey':
      return runCustomerCommand(deps, command);
    case 'audit.list':
      return listAuditEntries(db, command);
    case 'prune':
      return pruneNow(deps);
    case 'outbox.list':
      return { ok: true, output: await listOutbox(db, command.status) };
    case 'outbox.retry':
      return retryMessage(deps, command.id);
  }
}

type CommandNamed<N extends AdminCommand['name']> = Extract<AdminCommand, { name: N }>;

function noStore(): AdminResult {
  return { ok: false, error: 'no store yet: start the service once' };
}

async function setStore({ db, clock, config }: AdminDeps, command: CommandNamed<'store.set'>): Promise<AdminResult> {
  const mode = command.changes.identityMode;
  const problem = mode === undefined ? undefined : deliveryProblem(config, mode);
  if (problem !== undefined) return { ok: false, error: `${problem.variable} ${problem.reason}` };
  const result = await updateStore(db, clock, command.changes, { force: command.force, countCustomers });
  if (result.ok) return { ok: true, output: describeStore(result.store) };
  if (result.reason !== 'identity_mode_in_use') return noStore();
  return {
    ok: false,
    error: `the store has ${counted(result.customers, 'customer')} registered by its current identity mode; add --force to switch anyway (they will not be able to sign in)`,
  };
}

async function deleteCustomer({ db, clock, keys }: AdminDeps, identity: string): Promise<AdminResult> {
  const store = await loadStore(db);
  if (store === null) return noStore();
  if (keys === undefined) return { ok: false, error: 'customer delete needs the deployment keys' };
  const row = await findCustomerByIdentity(db, parseIdentity(store.identityMode, identity));
  if (row === null) return { ok: false, error: `no customer with ${store.identityMode} ${identity}` };
  // The same erasure as the customer's own, without a password; a running service's
  // dispatcher finds the queued notice on its next poll.
  const result = await eraseAccount({ db, clock, keys, messagesQueued: () => {} }, store.name, row.id);
  if (!result.ok) return { ok: false, error: `no customer with ${store.identityMode} ${identity}` };
  await writeAuditEntry(db, clock, {
    event: 'account.deleted',
    customerId: row.id,
    details: { by: 'operator' },
  });
  return { ok: true, output: { id: row.id, status: 'deleted' } };
}

/** A customer's sessions and passkeys: listed, or ended and removed with an audit entry. */
async function runCustomerCommand(
  { db, clock }: AdminDeps,
  command: CommandNamed<
    'customer.sessions' | 'customer.revoke-sessions' | 'customer.passkeys' | 'customer.remove-passkey'
  >,
): Promise<AdminResult> {
  const row = await customerNamed(db, command.identity);
  if (typeof row === 'string') return { ok: false, error: row };
  switch (command.name) {
    case 'customer.sessions':
      // No request, so no session is current: every entry says current: false.
      return { ok: true, output: await listCustomerSessions(db, clock, row.id) };
    case 'customer.revoke-sessions': {
      const count = await revokeCustomerSessions(db, clock, row.id);
      await writeAuditEntry(db, clock, {
        event: 'session.revoked',
        customerId: row.id,
        details: { count: String(count), by: 'operator' },
      });
      return { ok: true, output: { status: 'revoked', count } };
    }
    case 'customer.passkeys':
      return { ok: true, output: await listPasskeys(db, row.id) };
    case 'customer.remove-passkey':
      if (!(await removePasskey(db, row.id, command.id)))
        return { ok: false, error: `no passkey ${command.id} for ${command.identity}` };
      await writeAuditEntry(db, clock, {
        event: 'passkey.removed',
        customerId: row.id,
        details: { passkey: command.id, by: 'operator' },
      });
      return { ok: true, output: { id: command.id, status: 'deleted' } };
  }
}

async function listAuditEntries(db: Database, command: CommandNamed<'audit.list'>): Promise<AdminResult> {
  let customerId: string | undefined;
  if (command.identity !== undefined) {
    const store = await loadStore(db);
    const row =
      store === null ? null : await findCustomerByIdentity(db, parseIdentity(store.identityMode, command.identity));
    if (row === null) return { ok: false, error: `no customer with identity ${command.identity}` };
    customerId = row.id;
  }
  return { ok: true, output: await listAudit(db, { customerId, event: command.event, limit: command.limit }) };
}

async function pruneNow({ db, clock, retention }: AdminDeps): Promise<AdminResult> {
  try {
    const removed = await prune({ db, clock, retention: retention ?? defaultRetention });
    return { ok: true, output: { removed } };
  } catch (error) {
    // The other tables were pruned all the same: say which failed, and what went.
    if (!(error instanceof PruneError)) throw error;
    return { ok: false, error: `${error.message}; removed ${JSON.stringify(error.removed)}` };
  }
}

async function retryMessage({ db, clock }: AdminDeps, id: string): Promise<AdminResult> {
  const outcome = await retryOutboxMessage(db, clock, id);
  if (outcome === 'retried') return { ok: true, output: { id, status: 'pending' } };
  return {
    ok: false,
    error:
      outcome === 'not_found'
        ? `no outbox message ${id}`
        : `message ${id} is not failed (only failed messages can be sent again)`,
  };
}
