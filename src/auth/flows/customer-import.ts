import { recordImportEvent } from '../../hooks/webhook-outbox.js';
import { randomUUID } from 'node:crypto';
import type { StoreQueryable } from '../../storage/database.js';
import type { StoreContext } from '../../store/store.js';
import type { AuthDeps } from '../deps.js';
import {
  ImportInputError,
  parseImportLine,
  type ImportedProvider,
  type ImportRecord,
  type ImportRefusal,
} from '../rules/import-line.js';
import { credentialsChanged, proveControl } from '../rules/ownership.js';
import { keptRefusals, noImportCounts, recordImport, type ImportCounts } from '../tables/customer-imports.js';
import { queueInvitation } from '../rules/queue-code.js';
import { listProviders } from '../../providers/configured.js';
import { replacePassword, type CustomerRow } from '../tables/customers.js';
import {
  insertImportedCustomers,
  lockCustomersByIdentity,
  updateImportedFields,
  type ImportedCustomerRow,
  type NewImportedCustomer,
} from '../tables/imported-customers.js';
import { findLinkedCustomer, insertProviderLink } from '../tables/provider-links.js';
import { deleteCustomerSessions } from '../tables/sessions.js';

/**
 * Customers brought from another system, a line at a time from a stream that
 * is never held whole: lines are checked, then written a batch at a time, each batch one
 * transaction, so memory stays flat and a crash loses at most the batch it was writing.
 *
 * It is idempotent by identity: a line whose identity has an account here changes only the fields
 * it gives, and a line that changes nothing is `unchanged`. So an import stopped half-way is
 * finished by running it again. What it never does:
 * - replace a password the customer set (or that a sign-in re-hashed) here: only no hash or a hash
 *   still in another system's format is replaced, and a replaced one ends the account's sessions;
 * - make an unproven account own anything lasting: provider links come only with a proven
 *   identity, and `verified: true` on an account that was a claim is a first proof of control
 *   (what the claimant set up ends, their password included, as at any other proof);
 * - mark a proven account unproven (`verified: false` is then ignored).
 */

/** Lines written per transaction: large enough to amortize the round trips, small enough to hold few locks. */
export const importBatchLines = 500;

export interface ImportOptions {
  dryRun: boolean;
  /** Called after every batch (and at the end) with the counts so far. */
  progress?: (counts: ImportCounts) => Promise<void> | void;
  /** Called with every refused line's reasons (the report keeps only the first ones). */
  refused?: (refusals: ImportRefusal[]) => void;
}

type ImportDeps = Pick<
  AuthDeps,
  'db' | 'clock' | 'hasher' | 'keys' | 'allowedCallingCodes' | 'messagesQueued' | 'eventsRecorded'
>;

/** Rolls a dry run's batch back after it was written, so its counts are exactly a real run's. */
class DryRunRollback extends Error {}

export async function importCustomers(
  deps: ImportDeps,
  store: StoreContext,
  providerIds: ReadonlyMap<string, string>,
  lines: AsyncIterable<string>,
  options: ImportOptions,
): Promise<ImportCounts> {
  const counts = noImportCounts();
  const refuse = (refusals: ImportRefusal[]) => {
    options.refused?.(refusals);
    counts.refused += 1;
    const kept = counts.refusals;
    if (kept.length >= keptRefusals && refusals[0]!.line > kept[kept.length - 1]!.line) return;
    // A batch's refusals come when it is written, after later lines' own: kept in line order.
    counts.refusals = [...kept, ...refusals].sort((a, b) => a.line - b.line).slice(0, keptRefusals);
  };
  let batch: ImportRecord[] = [];
  const identities = new Set<string>();
  const flush = async () => {
    if (batch.length === 0) return;
    await writeBatch(deps, store, providerIds, batch, counts, refuse, options.dryRun);
    batch = [];
    identities.clear();
    await options.progress?.(counts);
  };
  let lineNumber = 0;
  for await (const text of lines) {
    lineNumber += 1;
    if (text.trim() === '') continue;
    counts.lines += 1;
    const parsed = parseImportLine(store, text, lineNumber, {
      now: deps.clock.now(),
      allowedCallingCodes: deps.allowedCallingCodes,
    });
    if ('refusals' in parsed) {
      refuse(parsed.refusals);
      continue;
    }
    // The same identity twice in one batch: the second line must see what the first wrote.
    if (identities.has(parsed.record.identity.value)) await flush();
    batch.push(parsed.record);
    identities.add(parsed.record.identity.value);
    if (batch.length >= importBatchLines) await flush();
  }
  await flush();
  await options.progress?.(counts);
  return counts;
}

type Outcome = 'created' | 'updated' | 'unchanged' | ImportRefusal[];
/** An account a line asked to invite, without a password once the line is written. */
type Invitee = Pick<CustomerRow, 'id' | 'identity_value' | 'locale'>;

async function writeBatch(
  deps: ImportDeps,
  store: StoreContext,
  providerIds: ReadonlyMap<string, string>,
  records: ImportRecord[],
  counts: ImportCounts,
  refuse: (refusals: ImportRefusal[]) => void,
  dryRun: boolean,
): Promise<void> {
  let outcomes: Outcome[] = [];
  let invited = 0;
  try {
    await deps.db.transaction(async (tx) => {
      const invitees: Invitee[] = [];
      outcomes = await applyBatch(deps, tx, store, providerIds, records, invitees);
      for (const invitee of invitees)
        if (await queueInvitation(tx, deps, store, invitee, { unlessLive: true })) invited += 1;
      if (dryRun) throw new DryRunRollback();
    });
  } catch (error) {
    if (!(error instanceof DryRunRollback)) throw error;
  }
  counts.invited += invited;
  if (invited > 0 && !dryRun) deps.messagesQueued();
  for (const outcome of outcomes) {
    if (Array.isArray(outcome)) refuse(outcome);
    else counts[outcome] += 1;
  }
}

async function applyBatch(
  deps: ImportDeps,
  tx: StoreQueryable,
  store: StoreContext,
  providerIds: ReadonlyMap<string, string>,
  records: ImportRecord[],
  invitees: Invitee[],
): Promise<Outcome[]> {
  const now = deps.clock.now();
  const existing = new Map(
    (
      await lockCustomersByIdentity(
        tx,
        store.identityMode,
        records.map((record) => record.identity.value),
      )
    ).map((row) => [row.identity_value, row]),
  );
  const outcomes: Outcome[] = [];
  const created: { record: ImportRecord; customer: NewImportedCustomer; at: number }[] = [];
  // Provider accounts an earlier line of this batch links: not in the table until the batch writes them.
  const claimed = new Set<string>();
  for (const record of records) {
    const unknownIssuer = record.providers.findIndex((provider) => !providerIds.has(provider.issuer));
    if (unknownIssuer >= 0) {
      outcomes.push([
        fieldRefusal(record, `providers[${unknownIssuer}].issuer`, 'no provider of this store has this issuer'),
      ]);
      continue;
    }
    const row = existing.get(record.identity.value);
    // Checked before anything of the line is written: a refused line changes nothing.
    const taken = await linksTaken(tx, record, row?.id ?? null, claimed);
    if (taken.length > 0) {
      outcomes.push(taken);
      continue;
    }
    for (const provider of record.providers) claimed.add(linkKey(provider));
    if (row !== undefined) {
      outcomes.push(await updateCustomer(deps, tx, providerIds, row, record, invitees));
      continue;
    }
    if (record.providers.length > 0 && record.verified !== true) {
      outcomes.push([
        fieldRefusal(record, 'providers', 'a provider is linked only to a proven identity (verified: true)'),
      ]);
      continue;
    }
    const customer: NewImportedCustomer = {
      id: randomUUID(),
      name: record.name ?? '',
      value: record.identity.value,
      passwordHash: record.passwordHash ?? null,
      verifiedAt: record.verified === true ? now : null,
      createdAt: record.createdAt ?? now,
      locale: record.locale ?? null,
      externalId: record.externalId ?? null,
    };
    created.push({ record, customer, at: outcomes.length });
    outcomes.push('created');
  }
  const inserted = await insertImportedCustomers(
    tx,
    store.identityMode,
    created.map((entry) => entry.customer),
    now,
  );
  for (const { record, customer, at } of created) {
    if (inserted.has(customer.value)) {
      await linkProviders(deps, tx, providerIds, customer.id, record);
      // A line with a hash may not ask for an invitation (parseImportLine): this account has no password.
      if (record.invite === true)
        invitees.push({ id: customer.id, identity_value: customer.value, locale: customer.locale });
    } else
      outcomes[at] = [
        fieldRefusal(record, record.identity.type, 'registered while the import ran; run the import again'),
      ];
  }
  return outcomes;
}

function fieldRefusal(record: ImportRecord, field: string, reason: string): ImportRefusal {
  return { line: record.line, field, reason };
}

/** An existing account takes the fields the line gives; what it already holds is `unchanged`. */
async function updateCustomer(
  deps: ImportDeps,
  tx: StoreQueryable,
  providerIds: ReadonlyMap<string, string>,
  row: ImportedCustomerRow,
  record: ImportRecord,
  invitees: Invitee[],
): Promise<Outcome> {
  const now = deps.clock.now();
  let changed = false;
  let customer: CustomerRow = row;
  if (record.verified === true && row.verified_at === null) {
    // The platform vouches for the identity: a first proof of control, which ends what the claimant
    // set up, their password included (the line's hash, if any, is set below in its place).
    customer = await proveControl(tx, deps.clock, row, { retiresPassword: true, silent: true });
    changed = true;
  }
  if (record.providers.length > 0 && customer.verified_at === null)
    return [fieldRefusal(record, 'providers', 'a provider is linked only to a proven identity (verified: true)')];
  const hash = record.passwordHash;
  const replaceable = customer.password_hash === null || deps.hasher.needsRehash(customer.password_hash);
  if (hash !== undefined && hash !== customer.password_hash && replaceable) {
    await replacePassword(tx, row.id, hash, now);
    await deleteCustomerSessions(tx, row.id);
    await credentialsChanged(tx, deps.clock, row.id);
    changed = true;
  }
  const fields = {
    name: record.name !== undefined && record.name !== row.name ? record.name : undefined,
    locale: record.locale !== undefined && record.locale !== row.locale ? record.locale : undefined,
    externalId:
      record.externalId !== undefined && record.externalId !== row.external_id ? record.externalId : undefined,
  };
  if (Object.values(fields).some((value) => value !== undefined)) {
    await updateImportedFields(tx, row.id, fields, now);
    changed = true;
  }
  if ((await linkProviders(deps, tx, providerIds, row.id, record)) > 0) changed = true;
  if (record.invite === true && customer.password_hash === null)
    invitees.push({ id: row.id, identity_value: row.identity_value, locale: fields.locale ?? row.locale });
  return changed ? 'updated' : 'unchanged';
}

const linkKey = (provider: ImportedProvider) => `${provider.issuer} ${provider.subject}`;

/** The line's provider accounts that are linked to another customer of the store already. */
async function linksTaken(
  tx: StoreQueryable,
  record: ImportRecord,
  customerId: string | null,
  claimed: ReadonlySet<string>,
): Promise<ImportRefusal[]> {
  const refusals: ImportRefusal[] = [];
  for (const [i, provider] of record.providers.entries()) {
    const owner = claimed.has(linkKey(provider))
      ? 'another line'
      : await findLinkedCustomer(tx, provider.issuer, provider.subject);
    if (owner !== null && owner !== customerId)
      refusals.push(fieldRefusal(record, `providers[${i}]`, "linked to another of the store's customers"));
  }
  return refusals;
}

/** Links the line's provider accounts not linked yet (linksTaken checked the others); how many it linked. */
async function linkProviders(
  deps: ImportDeps,
  tx: StoreQueryable,
  providerIds: ReadonlyMap<string, string>,
  customerId: string,
  record: ImportRecord,
): Promise<number> {
  let linked = 0;
  for (const provider of record.providers) {
    const added = await insertProviderLink(tx, deps.clock, {
      customerId,
      providerId: providerIds.get(provider.issuer)!,
      issuer: provider.issuer,
      subject: provider.subject,
      email: provider.email,
    });
    if (added) linked += 1;
  }
  return linked;
}

/**
 * An import whose report (started with startImport) follows it: its counts after every batch, and
 * its end, done or failed. A failure is reported in words an operator can act on and thrown on.
 */
export async function reportedImport(
  deps: ImportDeps,
  store: StoreContext,
  importId: string,
  lines: AsyncIterable<string>,
  options: ImportOptions,
): Promise<ImportCounts> {
  let last = noImportCounts();
  const progress = async (counts: ImportCounts) => {
    last = counts;
    await recordImport(deps.db, deps.clock, importId, counts);
    await options.progress?.(counts);
  };
  try {
    const providers = await listProviders(deps.db);
    const providerIds = new Map(providers.map((provider) => [provider.issuer, provider.id]));
    const counts = await importCustomers(deps, store, providerIds, lines, { ...options, progress });
    // The store's systems hear of a real import once, with its counts, as it is reported done.
    const announced = await deps.db.transaction(async (tx) => {
      await recordImport(tx, deps.clock, importId, counts, { status: 'done' });
      if (options.dryRun) return false;
      const { created, updated, unchanged, refused, invited } = counts;
      const summary = { import_id: importId, created, updated, unchanged, refused, invited };
      return recordImportEvent(tx, deps.clock, summary);
    });
    if (announced) deps.eventsRecorded();
    return counts;
  } catch (error) {
    // Never an internal error's own text: it may quote SQL or a file's content. The service's log has it.
    const reason =
      error instanceof ImportInputError
        ? error.message
        : `stopped after ${last.lines} lines by an internal error (the service's log has it); run it again to finish`;
    await recordImport(deps.db, deps.clock, importId, last, { status: 'failed', error: reason }).catch(() => {});
    throw error;
  }
}
