import { randomUUID } from 'node:crypto';
import { lastSignInAt } from '../../audit.js';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import type { StoreQueryable } from '../../storage/database.js';
import type { StoreContext } from '../../store/store.js';
import { channelFor, type MessagingDeps } from '../deps.js';
import { fail, ok, type Result } from '../result.js';
import { blockOn } from '../rules/blocking.js';
import { maskIdentity } from '../rules/identity.js';
import type { ImportRecord } from '../rules/import-line.js';
import { credentialsChanged, proveControl, templateName } from '../rules/ownership.js';
import { queueCode, queueInvitation } from '../rules/queue-code.js';
import {
  insertCustomer,
  lockCustomer,
  setTwoFactor,
  switchIdentity,
  updateCustomerProfile,
  type CustomerRow,
} from '../tables/customers.js';
import {
  findStaffCustomer,
  retirePassword,
  setBlock,
  updateStaffFields,
  type StaffCustomerRow,
} from '../tables/staff-customers.js';
import { listPasskeys } from '../tables/passkeys.js';
import { endCustomerPendingSignIns } from '../tables/pending-sign-ins.js';
import { deleteSecondStep } from '../tables/second-steps.js';
import { listProviderLinks, type ProviderLinkView } from '../tables/provider-links.js';
import { countLiveCustomerSessions, revokeCustomerSessions } from '../tables/sessions.js';

/**
 * What the platform's staff do to a store's customers: create, change, block, require a reset.
 * Each change is one transaction with the customer row locked, as the customer's own changes are,
 * writes its event for the store's endpoints there, and sends the customer the notice their own
 * change of the same kind would send. The answer is the customer as staff see them.
 */

export interface CustomerDetails {
  row: StaffCustomerRow;
  sessions: number;
  passkeys: number;
  providers: ProviderLinkView[];
  lastSignInAt: string | null;
}

/** The customer with what support asks about; null when the store has none with this id. */
export async function customerDetails(
  deps: Pick<MessagingDeps, 'db' | 'clock'>,
  id: string,
): Promise<CustomerDetails | null> {
  const row = await findStaffCustomer(deps.db, id);
  if (row === null) return null;
  const [sessions, passkeys, providers, lastSignIn] = await Promise.all([
    countLiveCustomerSessions(deps.db, deps.clock, id),
    listPasskeys(deps.db, id),
    listProviderLinks(deps.db, id),
    lastSignInAt(deps.db, id),
  ]);
  return { row, sessions, passkeys: passkeys.length, providers, lastSignInAt: lastSignIn };
}

/** The work of one change on the locked row; what it queued and recorded is nudged after the commit. */
async function changeLocked<T>(
  deps: MessagingDeps,
  id: string,
  work: (tx: StoreQueryable, customer: CustomerRow) => Promise<Result<T, 'identity_unavailable'>>,
): Promise<Result<T, 'not_found' | 'identity_unavailable'>> {
  const result = await deps.db.transaction(async (tx): Promise<Result<T, 'not_found' | 'identity_unavailable'>> => {
    const customer = await lockCustomer(tx, { id });
    if (customer === null) return fail('not_found');
    return work(tx, customer);
  });
  if (result.ok) {
    deps.messagesQueued();
    deps.eventsRecorded();
  }
  return result;
}

export interface Block {
  reason: string;
  until: Date | null;
}

/** Blocks the account: every session ends now, and none opens while the block holds. */
export async function blockCustomer(deps: MessagingDeps, id: string, block: Block) {
  return changeLocked(deps, id, async (tx) => {
    await setBlock(tx, id, block, deps.clock.now());
    await revokeCustomerSessions(tx, deps.clock, id);
    const until = block.until === null ? null : block.until.toISOString();
    await recordCustomerEvent(tx, deps.clock, {
      type: 'customer.blocked',
      customerId: id,
      data: { reason: block.reason, until },
    });
    return ok(undefined);
  });
}

/** Lifts a block (one whose end has passed included); an account not blocked is left as it is. */
export async function unblockCustomer(deps: MessagingDeps, id: string) {
  return changeLocked(deps, id, async (tx, customer) => {
    if (customer.blocked_at === null) return ok(undefined);
    await setBlock(tx, id, null, deps.clock.now());
    await recordCustomerEvent(tx, deps.clock, { type: 'customer.unblocked', customerId: id, data: {} });
    return ok(undefined);
  });
}

/**
 * Retires the password (it signs in no more, and no login that checked it opens a session), ends
 * every session and live code, and sends a reset code: the customer sets a new password with
 * forgot/reset's second step. None is sent while a block holds, as forgot sends none.
 */
export async function requirePasswordReset(deps: MessagingDeps, store: StoreContext, id: string) {
  return changeLocked(deps, id, async (tx, customer) => {
    const now = deps.clock.now();
    await retirePassword(tx, id, now);
    await revokeCustomerSessions(tx, deps.clock, id);
    await credentialsChanged(tx, deps.clock, id);
    if (blockOn(customer, now) === null) await queueCode(tx, deps, store, customer, 'password_reset');
    await recordCustomerEvent(tx, deps.clock, {
      type: 'customer.password_changed',
      customerId: id,
      data: { how: 'retired' },
    });
    return ok(undefined);
  });
}

/**
 * Removes the customer's second step (a lost phone and lost recovery codes, the shopper's identity
 * made sure of by support): as the customer's own turning it off does, without their code.
 */
export async function removeSecondStep(deps: MessagingDeps, store: StoreContext, id: string) {
  return changeLocked(deps, id, async (tx, customer) => {
    if (!customer.two_factor) return ok(undefined);
    await deleteSecondStep(tx, id);
    await setTwoFactor(tx, id, false, deps.clock.now());
    await endCustomerPendingSignIns(tx, id);
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'two_factor_off',
      to: customer.identity_value,
      customerId: id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(customer),
      language: messageLanguage(store, customer.locale),
    });
    return ok(undefined);
  });
}

/** Staff's change: each field when given; `identity` is the new one, normalized. */
export interface StaffChange {
  name?: string | undefined;
  locale?: string | null | undefined;
  externalId?: string | null | undefined;
  verified?: boolean | undefined;
  identity?: string | undefined;
}

/**
 * Changes what staff may change. A new identity is verified as `verified` says (proven now, or
 * not), ends every session and live code, and sends the old identity the notice a customer's own
 * change sends. `verified: true` on an unproven account is its first proof of control, which ends
 * what a claimant set up before it, as every first proof does; `false` makes it unproven again.
 */
export async function changeCustomer(deps: MessagingDeps, store: StoreContext, id: string, change: StaffChange) {
  return changeLocked(deps, id, async (tx, customer) => {
    const now = deps.clock.now();
    let current = customer;
    if (change.identity !== undefined && change.identity !== customer.identity_value) {
      const verifiedAt = change.verified === true ? now : null;
      const switched = await switchIdentity(tx, id, store.identityMode, change.identity, now, verifiedAt);
      if (switched === null) return fail('identity_unavailable');
      await revokeCustomerSessions(tx, deps.clock, id);
      await credentialsChanged(tx, deps.clock, id);
      await enqueueMessage(tx, deps, {
        channel: channelFor(customer.identity_type),
        purpose: 'identity_changed',
        to: customer.identity_value,
        customerId: id,
        storeName: store.name,
        branding: store.mailBranding,
        customerName: templateName(customer),
        language: messageLanguage(store, customer.locale),
        maskedIdentity: maskIdentity(store.identityMode, change.identity),
      });
      await recordCustomerEvent(tx, deps.clock, {
        type: 'customer.identity_changed',
        customerId: id,
        data: { previous_identity: { type: customer.identity_type, value: customer.identity_value } },
      });
      current = switched;
    } else if (change.verified === true) {
      current = await proveControl(tx, deps.clock, customer, { retiresPassword: false });
    } else if (change.verified === false && customer.verified_at !== null) {
      await updateStaffFields(tx, id, { verifiedAt: null }, now);
    }
    if (change.name !== undefined || change.locale !== undefined)
      await updateCustomerProfile(tx, id, { name: change.name, locale: change.locale }, now);
    if (change.externalId !== undefined) await updateStaffFields(tx, id, { externalId: change.externalId }, now);
    return ok(current.id);
  });
}

/**
 * A customer made by staff, in the caller's transaction (which may be an idempotent call's): the
 * record is checked as an import line is. Verified when staff say so (its first proof, by their
 * word); invited when asked and it has no password. Null when the identity is taken. The caller
 * nudges the dispatchers once it commits.
 */
export async function createCustomer(
  tx: StoreQueryable,
  deps: Pick<MessagingDeps, 'clock' | 'keys'>,
  store: StoreContext,
  record: ImportRecord,
): Promise<string | null> {
  const now = deps.clock.now();
  const row = await insertCustomer(tx, {
    id: randomUUID(),
    name: record.name ?? '',
    type: record.identity.type,
    value: record.identity.value,
    passwordHash: record.passwordHash ?? null,
    now,
    verified: record.verified === true,
    locale: record.locale ?? null,
  });
  if (row === null) return null;
  if (record.externalId !== undefined) await updateStaffFields(tx, row.id, { externalId: record.externalId }, now);
  const data = { method: 'staff' } as const;
  await recordCustomerEvent(tx, deps.clock, { type: 'customer.registered', customerId: row.id, data });
  if (row.verified_at !== null)
    await recordCustomerEvent(tx, deps.clock, { type: 'customer.verified', customerId: row.id, data: {} });
  if (record.invite === true && row.password_hash === null)
    await queueInvitation(tx, deps, store, row, { unlessLive: false });
  return row.id;
}
