import { eraseCustomerEvents, recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { listCustomerAudit, scrubAuditIdentity, type AuditRecord } from '../../audit.js';
import { eraseCustomerMessages, enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import { deleteCustomerChallenges } from '../tables/codes.js';
import {
  customerCreatedAt,
  deleteCustomer,
  findCustomerById,
  lockCustomer,
  toCustomer,
  type Customer,
  type CustomerRow,
} from '../tables/customers.js';
import type { StoreContext } from '../../store/store.js';
import { channelFor, type AuthDeps, type MessagingDeps } from '../deps.js';
import { fail, ok, type Result } from '../result.js';
import { currentPasswordRefused } from '../rules/reauthentication.js';
import { maskAddress } from '../rules/network.js';
import { deleteCustomerSessions, listCustomerSessions, type SessionView } from '../tables/sessions.js';
import { listKnownDevices } from '../tables/known-devices.js';
import { listPasskeys, type PasskeyView } from '../tables/passkeys.js';
import { listProviderLinks, type ProviderLinkView } from '../tables/provider-links.js';
import { templateName } from '../rules/ownership.js';

/**
 * An audit event as the customer sees it in their export: the customer id is theirs, so it is left
 * out, and its addresses are masked to their network (see exportedEvent).
 */
export interface ExportedAuditEvent {
  occurred_at: string;
  event: string;
  client_address: string | null;
  details: Record<string, string>;
}

/**
 * An account's events include what strangers did to it (a failed login against it), and their full
 * address would tell the customer who someone else is. So every address goes out masked as the
 * session list masks it: the client address (null if it does not parse, never as stored), and any
 * detail whose value is an address. The trail itself keeps full addresses for the operator.
 */
function exportedEvent(event: AuditRecord): ExportedAuditEvent {
  const details = Object.entries(event.details).map(([key, value]) => [key, maskAddress(value) ?? value]);
  return {
    occurred_at: event.occurred_at,
    event: event.event,
    client_address: event.client_address === null ? null : maskAddress(event.client_address),
    details: Object.fromEntries(details),
  };
}

/** The customer's own data, and nothing about anyone else. */
export interface AccountExport {
  exported_at: string;
  /** `two_factor`: a second step is on; its secret and recovery codes are never exported. */
  customer: Customer & { created_at: string; two_factor: boolean };
  sessions: SessionView[];
  /** The devices remembered for new-sign-in notices: a family and a masked address each. */
  known_devices: Array<{ family: string; masked_address: string; last_seen_at: string }>;
  /** The passkeys that can sign in to the account (their names and dates; public keys stay behind). */
  passkeys: PasskeyView[];
  /** The sign-in providers linked to the account: which, the email each gave, and when. */
  provider_links: ProviderLinkView[];
  audit_events: ExportedAuditEvent[];
}

/**
 * Everything kept about one customer: the account, their sessions, the devices remembered for
 * new-sign-in notices and their audit events, each
 * read by the customer id only. Fails with `gone` when the account is gone.
 */
export async function exportAccount(
  deps: Pick<AuthDeps, 'db' | 'clock'>,
  customerId: string,
  currentSessionId: string | undefined,
): Promise<Result<AccountExport, 'gone'>> {
  const row = await findCustomerById(deps.db, customerId);
  const createdAt = row === null ? null : await customerCreatedAt(deps.db, customerId);
  if (row === null || createdAt === null) return fail('gone');
  const [sessions, devices, passkeys, links, events] = await Promise.all([
    listCustomerSessions(deps.db, deps.clock, customerId, currentSessionId),
    listKnownDevices(deps.db, customerId),
    listPasskeys(deps.db, customerId),
    listProviderLinks(deps.db, customerId),
    listCustomerAudit(deps.db, customerId),
  ]);
  return ok({
    exported_at: deps.clock.now().toISOString(),
    customer: { ...toCustomer(row), locale: row.locale, created_at: createdAt, two_factor: row.two_factor },
    sessions,
    known_devices: devices,
    passkeys,
    provider_links: links,
    audit_events: events.map(exportedEvent),
  });
}

/** What erasing an account needs: no hasher, so the command line can do it too. */
export type ErasureDeps = MessagingDeps;

/** The store an account is erased from, as its notice names it and picks its language. */
export type ErasingStore = Pick<StoreContext, 'name' | 'languages' | 'defaultLanguage' | 'mailBranding'>;

/** `wrong_password` names `current_password`, so the caller can answer it as a field error. */
export type DeleteAccountResult = Result<void, 'wrong_password' | 'gone'>;

/**
 * Self-service deletion: the password is checked like a login's (one full verification), then the
 * account is erased, but only if the password checked is still the current one.
 */
export async function deleteAccountWithPassword(
  deps: ErasureDeps & Pick<AuthDeps, 'hasher'>,
  store: ErasingStore,
  customer: CustomerRow,
  password: string,
): Promise<DeleteAccountResult> {
  if (!(await deps.hasher.verify(customer.password_hash, password))) return currentPasswordRefused();
  return eraseAccount(deps, store, customer.id, customer.credential_version);
}

/**
 * Erases an account in one transaction: its sessions and codes, the customer row (its passkeys,
 * passkey challenges, provider links and known devices go with it, by their foreign keys' ON DELETE CASCADE), every
 * outbox message about it or to its identity, whichever identity it went to (unsent ones are
 * dropped, all lose the address and body), and every identity
 * value in the details of its audit events, which keep the customer id. Then one
 * `account_deleted` notice is queued to the identity, the only row that still holds it, until it
 * is sent. The identity is free for a new registration as soon as this commits.
 *
 * The customer row is locked first. A login that has checked the password and is opening its
 * session reads that row FOR SHARE (see createSession), so it waits for this commit and then finds
 * no customer: no session outlives the account, and none references a deleted customer.
 *
 * `credentialVersion`, when given, is the version the caller checked a password against: if it
 * changed meanwhile, that password is no longer the password and nothing is erased.
 */
export async function eraseAccount(
  deps: ErasureDeps,
  store: ErasingStore,
  customerId: string,
  credentialVersion?: number,
): Promise<DeleteAccountResult> {
  const result = await deps.db.transaction(async (tx): Promise<DeleteAccountResult> => {
    const customer = await lockCustomer(tx, { id: customerId });
    if (customer === null) return fail('gone');
    if (credentialVersion !== undefined && customer.credential_version !== credentialVersion) {
      return currentPasswordRefused();
    }
    const channel = channelFor(customer.identity_type);
    await deleteCustomerSessions(tx, customer.id);
    await deleteCustomerChallenges(tx, customer.id);
    await eraseCustomerMessages(tx, deps.clock, customer.id, { channel, recipient: customer.identity_value });
    await scrubAuditIdentity(tx, customer.id, customer.identity_value);
    // Written while the row is there to name it; events no endpoint still waits for lose their bodies.
    await recordCustomerEvent(tx, deps.clock, { type: 'customer.deleted', customerId: customer.id, data: {} });
    await eraseCustomerEvents(tx, customer.id);
    await deleteCustomer(tx, customer.id);
    await enqueueMessage(tx, deps, {
      channel,
      purpose: 'account_deleted',
      to: customer.identity_value,
      // The customer row is gone: this message is about no one the database still knows.
      customerId: null,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(customer),
      // Read before the row went: the notice is written in the language the customer had.
      language: messageLanguage(store, customer.locale),
    });
    return ok(undefined);
  });
  if (result.ok) {
    deps.messagesQueued();
    deps.eventsRecorded();
  }
  return result;
}
