import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import { channelFor, type MessagingDeps } from '../deps.js';
import { fail, failFields, ok, type Result } from '../result.js';
import { blockOn } from '../rules/blocking.js';
import { secondStepRefused, takeSecondStep, type SecondStepAnswer } from '../rules/second-step.js';
import { asksSecondStep, completeSignIn, deviceKeyOf, type SignedIn, type SignInAttempt } from '../rules/sign-in.js';
import { lockCustomer } from '../tables/customers.js';
import { countTry, endPendingSignIn, pendingSignInTries } from '../tables/pending-sign-ins.js';
import { createSession } from '../tables/sessions.js';
import { templateName } from '../rules/ownership.js';

/**
 * `ended`: there is no sign-in to finish (none under this handle, expired, its last wrong try
 * taken, or the customer's password or second step changed since the first step). `invalid`: the
 * code was wrong, and tries are left.
 */
export type SecondStepResult = Result<
  SignedIn,
  'ended' | 'invalid' | 'blocked',
  { customerId: string | null; until?: Date | null }
>;

/**
 * Finishes a sign-in that waits for its second step. One transaction: the try counted first (so
 * tries made at once never exceed five together), the customer row locked, the code taken (a step
 * of the app once, a recovery code spent), then the session opened against the credential version
 * the first step was checked under, as the first step would have opened it.
 */
export async function finishSecondStep(
  deps: MessagingDeps,
  attempt: SignInAttempt,
  handle: string,
  given: SecondStepAnswer,
): Promise<SecondStepResult> {
  const device = deviceKeyOf(attempt.client);
  const outcome = await deps.db.transaction(async (tx) => {
    const pending = await countTry(tx, deps.clock, handle);
    if (pending === null) return fail('ended', { customerId: null });
    const { customerId } = pending;
    const customer = await lockCustomer(tx, { id: customerId });
    const current =
      customer !== null &&
      customer.credential_version === pending.credentialVersion &&
      asksSecondStep(attempt.store, customer);
    if (!current) {
      await endPendingSignIn(tx, handle);
      return fail('ended', { customerId });
    }
    const taken = await takeSecondStep(tx, deps, customerId, given);
    if (taken === null) {
      // The last wrong try ends it: the browser starts again from the first step.
      if (pending.failures < pendingSignInTries)
        return { ...failFields('invalid', secondStepRefused(given)), customerId };
      await endPendingSignIn(tx, handle);
      return fail('ended', { customerId });
    }
    await endPendingSignIn(tx, handle);
    const block = blockOn(customer, deps.clock.now());
    if (block !== null) return fail('blocked', { customerId, until: block.until });
    const opened = await createSession(tx, deps.clock, {
      customerId,
      credentialVersion: pending.credentialVersion,
      client: attempt.client,
      replaces: attempt.previousSessionId,
      knownDevice: device,
      signedIn: pending.method,
    });
    if (opened === null) return fail('ended', { customerId });
    if (taken === 'recovery_code')
      await enqueueMessage(tx, deps, {
        channel: channelFor(attempt.store.identityMode),
        purpose: 'recovery_code_used',
        to: customer.identity_value,
        customerId,
        storeName: attempt.store.name,
        branding: attempt.store.mailBranding,
        customerName: templateName(customer),
        language: messageLanguage(attempt.store, customer.locale),
      });
    return ok({ customer, ...opened, recovered: taken === 'recovery_code' });
  });
  if (!outcome.ok) return outcome;
  if (outcome.value.recovered) deps.messagesQueued();
  return completeSignIn(deps, attempt.store, { ...outcome.value, device });
}
