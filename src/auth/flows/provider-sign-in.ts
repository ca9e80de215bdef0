import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { withoutControls } from '../../i18n/controls.js';
import { randomUUID } from 'node:crypto';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { ProviderIdentity } from '../../providers/relying-party.js';
import type { StoreContext } from '../../store/store.js';
import { channelFor, type MessagingDeps } from '../deps.js';
import { maxNameLength } from '../rules/fields.js';
import { normalizeEmail } from '../rules/identity.js';
import { blockOn, type Blocked } from '../rules/blocking.js';
import { isProven, proveControl, templateName } from '../rules/ownership.js';
import {
  asksSecondStep,
  completeSignIn,
  deviceKeyOf,
  holdForSecondStep,
  type SecondStepAsked,
  type SignedIn,
  type SignInAttempt,
} from '../rules/sign-in.js';
import { fail, ok, type Result } from '../result.js';
import { insertCustomer, lockCustomer, type CustomerRow } from '../tables/customers.js';
import { listPasskeys } from '../tables/passkeys.js';
import {
  deleteProviderLinks,
  findLinkedCustomer,
  insertProviderLink,
  listProviderLinks,
  type ProviderLinkView,
} from '../tables/provider-links.js';
import { createSession, deleteSession } from '../tables/sessions.js';
import type { StoreQueryable } from '../../storage/database.js';

/**
 * Signing in with an OpenID Connect provider, matched safely against pre-account hijacking: the
 * link is the provider's issuer and subject, never the email alone, and an email counts only when
 * the provider asserts it verified.
 */

/** Which of the matching cases a sign-in took, for the audit trail. */
export type ProviderMatch = 'linked' | 'created' | 'linked_proven' | 'first_proof';

/** `blocked`: the account the provider's identity names is blocked; nothing was created or linked. */
export type ProviderSignInResult = Result<
  (SignedIn | SecondStepAsked) & { match: ProviderMatch },
  'email_unverified' | 'blocked',
  { customerId: string | null; until?: Date | null }
>;

/**
 * Signs in with a provider's checked identity:
 * 1. an account linked to this issuer and subject signs in;
 * 2. else, with a verified email no account holds: a new account (verified now, no password);
 * 3. else, with a verified email a proven account holds: linked, signed in, and a
 *    `provider_linked` notice goes to the identity;
 * 4. else, with a verified email an unproven account holds: the first proof of control (§ownership):
 *    what the claimant set up ends (sessions, passkeys, links, the password), then linked and signed in;
 * 5. an email not asserted verified: `email_unverified`, nothing created or linked.
 * All of it in one transaction with the customer row locked, as every way of signing in. A new
 * account records `locale` (the store language the browser asked for) as a registration does.
 */
export async function signInWithProvider(
  deps: MessagingDeps,
  attempt: SignInAttempt,
  identity: ProviderIdentity,
  locale: string | null = null,
): Promise<ProviderSignInResult> {
  const email = identity.email === null ? null : normalizeEmail(identity.email);
  const opened = await deps.db.transaction(async (tx) => {
    const matched = await matchCustomer(tx, deps, attempt.store, identity, email, locale);
    if (matched === null || 'blocked' in matched) return matched;
    const { client, previousSessionId } = attempt;
    const { customer } = matched;
    if (asksSecondStep(attempt.store, customer))
      return { ...matched, held: (await holdForSecondStep(tx, deps.clock, customer, 'provider')).value };
    const session = await createSession(tx, deps.clock, {
      customerId: customer.id,
      credentialVersion: customer.credential_version,
      client,
      signedIn: 'provider',
    });
    if (session === null) throw new Error('a session could not be opened for a locked customer');
    if (previousSessionId !== undefined) await deleteSession(tx, deps.clock, previousSessionId);
    // A new account and a first proof wrote their events too.
    const announced = matched.match === 'created' || matched.match === 'first_proof';
    return { ...matched, ...session, eventRecorded: session.eventRecorded || announced };
  });
  if (opened === null) return fail('email_unverified', { customerId: null });
  if ('blocked' in opened) return fail('blocked', { customerId: opened.customerId, until: opened.until });
  // Only a link to a proven account queued a message (its provider_linked notice).
  if (opened.match === 'linked_proven') deps.messagesQueued();
  // A new account and a first proof never have a second step: only a link, old or new, waits here.
  if ('held' in opened) return ok({ ...opened.held, match: opened.match });
  const signedIn = await completeSignIn(deps, attempt.store, { ...opened, device: deviceKeyOf(attempt.client) });
  return ok({ ...signedIn.value, match: opened.match });
}

async function matchCustomer(
  tx: StoreQueryable,
  deps: MessagingDeps,
  store: StoreContext,
  identity: ProviderIdentity,
  email: string | null,
  locale: string | null,
): Promise<{ customer: CustomerRow; match: ProviderMatch } | (Blocked & { customerId: string }) | null> {
  // A blocked account is refused before anything about it changes: no link, no proof, no notice.
  const unlessBlocked = (customer: CustomerRow) => {
    const block = blockOn(customer, deps.clock.now());
    return block === null ? null : { ...block, customerId: customer.id };
  };
  const linkedId = await findLinkedCustomer(tx, identity.issuer, identity.subject);
  if (linkedId !== null) {
    const linked = await lockCustomer(tx, { id: linkedId });
    if (linked !== null) return unlessBlocked(linked) ?? { customer: linked, match: 'linked' };
  }
  if (email === null || !identity.emailVerified) return null;
  const link = { providerId: identity.providerId, issuer: identity.issuer, subject: identity.subject, email };
  let customer = await lockCustomer(tx, { mode: 'email', value: email });
  if (customer === null) {
    const created = await insertCustomer(tx, {
      id: randomUUID(),
      name: nameFor(identity, email),
      type: 'email',
      value: email,
      passwordHash: null,
      now: deps.clock.now(),
      verified: true,
      locale,
    });
    // A registration of the same email committed meanwhile: match that account instead.
    customer = created ?? (await lockCustomer(tx, { mode: 'email', value: email }));
    if (customer === null) throw new Error('the email was taken and is gone again');
    if (created !== null) {
      await insertProviderLink(tx, deps.clock, { ...link, customerId: created.id });
      // Made proven: both its events, as a registration and its first proof would write them.
      const data = { method: 'provider' } as const;
      await recordCustomerEvent(tx, deps.clock, { type: 'customer.registered', customerId: created.id, data });
      await recordCustomerEvent(tx, deps.clock, { type: 'customer.verified', customerId: created.id, data: {} });
      return { customer: created, match: 'created' };
    }
  }
  const blocked = unlessBlocked(customer);
  if (blocked !== null) return blocked;
  if (isProven(customer)) {
    await insertProviderLink(tx, deps.clock, { ...link, customerId: customer.id });
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'provider_linked',
      to: customer.identity_value,
      customerId: customer.id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(customer),
      language: messageLanguage(store, customer.locale),
    });
    return { customer, match: 'linked_proven' };
  }
  // The provider's verified email is the first proof of control of this address: what the
  // claimant set up before it ends, and the password too, since this proof set none.
  const proven = await proveControl(tx, deps.clock, customer, { retiresPassword: true });
  await insertProviderLink(tx, deps.clock, { ...link, customerId: proven.id });
  return { customer: proven, match: 'first_proof' };
}

/** The provider's name for the shopper, else the email's local part: a new account needs one. */
function nameFor(identity: ProviderIdentity, email: string): string {
  const name = withoutControls(identity.name ?? '').trim();
  return [...(name === '' ? email.slice(0, email.lastIndexOf('@')) : name)].slice(0, maxNameLength).join('');
}

export type LinkProviderResult = Result<void, 'gone' | 'identity_unverified' | 'linked_elsewhere'>;

/**
 * Links a provider's account to the signed-in customer (the session proved who they are; the
 * provider's email is only shown). An unproven account takes no lasting way in. A provider account
 * linked to another customer stays theirs. The identity gets a `provider_linked` notice.
 */
export async function linkProvider(
  deps: MessagingDeps,
  store: StoreContext,
  customerId: string,
  identity: ProviderIdentity,
): Promise<LinkProviderResult> {
  const result = await deps.db.transaction(async (tx): Promise<LinkProviderResult> => {
    const customer = await lockCustomer(tx, { id: customerId });
    if (customer === null) return fail('gone');
    if (!isProven(customer)) return fail('identity_unverified');
    const linkedId = await findLinkedCustomer(tx, identity.issuer, identity.subject);
    if (linkedId === customer.id) return ok(undefined);
    if (linkedId !== null) return fail('linked_elsewhere');
    const email = identity.email === null ? null : normalizeEmail(identity.email);
    const { providerId, issuer, subject } = identity;
    if (!(await insertProviderLink(tx, deps.clock, { customerId, providerId, issuer, subject, email })))
      return fail('linked_elsewhere');
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'provider_linked',
      to: customer.identity_value,
      customerId,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(customer),
      language: messageLanguage(store, customer.locale),
    });
    return ok(undefined);
  });
  if (result.ok) deps.messagesQueued();
  return result;
}

export type UnlinkProviderResult = Result<void, 'gone' | 'not_linked' | 'last_sign_in_method'>;

/**
 * Removes the customer's links to a provider, unless that would leave no way in: no password, no
 * passkey and no other provider the store still offers (`offered`: a link to a removed one signs
 * nobody in). Under the customer's lock, so two unlinks cannot each leave the other as the last
 * way and remove both.
 */
export async function unlinkProvider(
  deps: Pick<MessagingDeps, 'db'>,
  customerId: string,
  providerId: string,
  offered: readonly string[],
): Promise<UnlinkProviderResult> {
  return deps.db.transaction(async (tx): Promise<UnlinkProviderResult> => {
    const customer = await lockCustomer(tx, { id: customerId });
    if (customer === null) return fail('gone');
    const links = await listProviderLinks(tx, customerId);
    if (!links.some((link) => link.provider === providerId)) return fail('not_linked');
    const otherWays =
      customer.password_hash !== null ||
      links.some((link) => link.provider !== providerId && offered.includes(link.provider)) ||
      (await listPasskeys(tx, customerId)).length > 0;
    if (!otherWays) return fail('last_sign_in_method');
    await deleteProviderLinks(tx, customerId, providerId);
    return ok(undefined);
  });
}

/** The customer's linked providers, oldest link first. */
export async function linkedProviders(
  deps: Pick<MessagingDeps, 'db'>,
  customerId: string,
): Promise<ProviderLinkView[]> {
  return listProviderLinks(deps.db, customerId);
}
