import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { withoutControls } from '../../i18n/controls.js';
import { randomUUID } from 'node:crypto';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import { loadProvider } from '../../providers/configured.js';
import type {
  PendingSignIn,
  ProviderFailure,
  ProviderIdentity,
  RelyingParties,
} from '../../providers/relying-party.js';
import { spendProviderState } from '../../providers/states.js';
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
import { createSession, deleteSession, findSessionCustomer, type SessionClient } from '../tables/sessions.js';
import type { StoreQueryable } from '../../storage/database.js';

/**
 * Signing in with an OpenID Connect provider, matched safely against pre-account hijacking: the
 * link is the provider's issuer and subject, never the email alone, and an email counts only when
 * the provider asserts it verified. The way back from the provider (`finishProviderCallback`) is
 * the whole ceremony: the state, the provider, the answer's checks, then linking or signing in.
 */

/** What the browser's start cookie holds: what the provider's answer is checked with, and whom a link is for. */
export interface HeldProviderStart extends PendingSignIn {
  /** The signed-in customer the provider's account is to be linked to; null for a sign-in. */
  linkTo: string | null;
  /** When the start's cookie runs out (milliseconds since the epoch): its spent state is kept until then. */
  expiresAt: number;
}

/** The way back from a provider, as the browser brought it. */
export interface ProviderCallback {
  store: StoreContext;
  /** The provider of the callback's path. */
  providerId: string;
  /** The start the browser's cookie holds for this store and provider, unexpired; undefined when none. */
  start: HeldProviderStart | undefined;
  /** The provider's answer: `code`, `state`, `iss`, `error`, … (and Apple's `user`). */
  answer: URLSearchParams;
  client: SessionClient;
  /** The browser's session cookie: the session a sign-in replaces, the one a link must still be. */
  sessionId: string | undefined;
  /** The store language the browser asked for, kept by a new account. */
  locale: string | null;
}

export type ProviderCallbackDeps = MessagingDeps & { providers: Pick<RelyingParties, 'finish'> };

/**
 * Why a way back failed. The state's: `no_start` (no start of this store and provider, or an
 * expired one), `state_mismatch` (an answer of another state), `state_spent` (a replay); then
 * `provider_removed`, the provider's `provider_refused` and `provider_error`; a link's
 * `session_changed`, `identity_unverified`, `linked_elsewhere` and `gone`; a sign-in's
 * `email_unverified` and `blocked`.
 */
export type ProviderCallbackFailure =
  | 'no_start'
  | 'state_mismatch'
  | 'state_spent'
  | 'provider_removed'
  | ProviderFailure
  | 'session_changed'
  | 'identity_unverified'
  | 'linked_elsewhere'
  | 'gone'
  | 'email_unverified'
  | 'blocked';

/** `reason` is the audit trail's word for the failure (the library's cause for a provider's). */
export type ProviderCallbackResult = Result<
  | { kind: 'signed_in'; signedIn: SignedIn | SecondStepAsked; match: ProviderMatch }
  | { kind: 'linked'; customerId: string; providerId: string },
  ProviderCallbackFailure,
  { reason: string; customerId: string | null }
>;

/** Whether the provider's answer is of the start this browser holds: one of another state leaves it alone. */
export function answersStart(start: HeldProviderStart | undefined, answer: URLSearchParams): boolean {
  return start !== undefined && answer.get('state') === start.state;
}

/**
 * The provider's way back, in this order (the state first, so nothing is looked up for a replay):
 * the answer must be of the browser's start, whose state is spent here once; the store must still
 * have the provider; the provider's answer is checked and its code exchanged (relying-party.ts);
 * then a start made to link links to its customer, if the browser's session is still theirs
 * (`linkProvider`), and any other signs in (`signInWithProvider`).
 */
export async function finishProviderCallback(
  deps: ProviderCallbackDeps,
  callback: ProviderCallback,
): Promise<ProviderCallbackResult> {
  const { store, providerId, start, answer } = callback;
  const failed = (error: ProviderCallbackFailure, reason: string = error, customerId: string | null = null) =>
    fail<ProviderCallbackFailure, { reason: string; customerId: string | null }>(error, { reason, customerId });
  if (start === undefined) return failed('no_start');
  if (!answersStart(start, answer)) return failed('state_mismatch');
  if (!(await spendProviderState(deps.db, start.state, new Date(start.expiresAt)))) return failed('state_spent');
  // A phone store has no providers; a secret no accepted key opens is as good as none.
  const provider =
    store.identityMode === 'email' ? await loadProvider(deps.db, deps.keys, providerId).catch(() => null) : null;
  if (provider === null) return failed('provider_removed');
  const finished = await deps.providers.finish(store.id, provider, start, answer);
  if (!finished.ok) return failed(finished.error, finished.reason);
  const { identity } = finished;

  if (start.linkTo !== null) {
    const customerId = start.linkTo;
    const current =
      callback.sessionId === undefined ? null : await findSessionCustomer(deps.db, deps.clock, callback.sessionId);
    if (current?.id !== customerId) return failed('session_changed', 'session_changed', customerId);
    const linked = await linkProvider(deps, store, customerId, identity);
    if (!linked.ok) return failed(linked.error, linked.error, customerId);
    return ok({ kind: 'linked', customerId, providerId: identity.providerId });
  }

  const attempt = { store, client: callback.client, previousSessionId: callback.sessionId };
  const result = await signInWithProvider(deps, attempt, identity, callback.locale);
  if (!result.ok) return failed(result.error, result.error, result.customerId);
  const { match, ...signedIn } = result.value;
  return ok({ kind: 'signed_in', signedIn, match });
}

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
