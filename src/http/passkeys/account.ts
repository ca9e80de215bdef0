import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FieldErrors } from '../../auth/deps.js';
import { finishPasskeyRegistration, startPasskeyRegistration } from '../../auth/flows/passkey-registration.js';
import { validateName } from '../../auth/rules/fields.js';
import { listPasskeys, removePasskey } from '../../auth/tables/passkeys.js';
import { declareRoute, wrongPasswordOutcome, type Outcomes } from '../core/declare.js';
import { accountOf, routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { clearPasskeyCookie, passkeyHandle } from './cookie.js';
import { passkeyRouteSupport, relyingParty } from './support.js';
import { ProblemError } from '../core/problems.js';
import { limits } from '../core/rate-limit.js';
import { Passkey, PasskeyCreationOptions, PasskeyList, PasskeyRegisterBody } from './schemas.js';
import { DeletedStatus } from '../core/schemas.js';

export const credentialRefused = fieldPhrase('credential');

const registrationOutcomes: Outcomes<'credential_refused' | 'identity_unverified' | 'wrong_password'> = {
  identity_unverified: { problem: 'identity_unverified' },
  wrong_password: wrongPasswordOutcome('passkey.add'),
  credential_refused: { problem: 'validation_failed' },
};

// Every route here needs the session and is a 404 while the store has passkeys off.
const account = { session: true, feature: 'passkeys' } as const;

const registrationOptions = declareRoute({
  operationId: 'passkeyRegistrationOptions',
  summary: 'Start adding a passkey',
  description:
    'Options for `navigator.credentials.create` (resident key required, user verification preferred), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser. An account whose email or phone is not yet proven (verified, reset or signed in with a code) cannot add a passkey: 403 identity_unverified.',
  ...account,
  answer: PasskeyCreationOptions,
  problems: ['identity_unverified'],
});

const registration = declareRoute({
  operationId: 'registerPasskey',
  summary: 'Add a passkey',
  description:
    "Verifies the browser's answer against this browser's challenge (spent whatever the outcome) and keeps the passkey. A wrong origin or RP ID, a used, expired or other browser's challenge, or a credential already registered is a 422 on `credential`. An account that has a password must send it as `current_password` (checked as a login is, counted by the failed-login limit; a wrong one is a 422 on `current_password`). An unproven account gets 403 identity_unverified.",
  ...account,
  body: PasskeyRegisterBody,
  answer: Passkey,
  status: 201,
  problems: [registrationOutcomes],
  examples: {
    fieldErrors: { credential: [credentialRefused], current_password: [fieldPhrase('wrong_current_password')] },
  },
});

const list = declareRoute({
  operationId: 'listPasskeys',
  summary: 'List my passkeys',
  description: "The signed-in customer's passkeys, newest first.",
  ...account,
  answer: PasskeyList,
});

const removal = declareRoute({
  operationId: 'removePasskey',
  summary: 'Remove a passkey',
  description:
    "Removes the passkey with this id; it can no longer sign in. Needs the session only. An id that is not one of the caller's passkeys answers 404 whether it exists or not.",
  ...account,
  params: Type.Object({ id: Type.String({ description: 'The `id` of a passkey from the list.' }) }),
  answer: DeletedStatus,
});

/** Passkeys in the account area: adding one, listing them, removing one. Each needs the session. */
export function passkeyRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { depsOf, audit, limit, forget, refusal } = routeKit(services);
  const { ceremonyOptions, cookieKeys, secure } = passkeyRouteSupport(services);

  return async (app) => {
    app.post('/passkeys/register/options', registrationOptions, async (request, reply) => {
      const { customer } = accountOf(request);
      return ceremonyOptions(request, reply, async (rp) => {
        const started = await startPasskeyRegistration(depsOf(request), rp, customer);
        if (!started.ok) throw new ProblemError('identity_unverified');
        return started.value;
      });
    });

    app.post('/passkeys/register', registration, async (request, reply) => {
      const { customer } = accountOf(request);
      // The current password is a guess like a login's: counted before the check, as one is.
      await limit(request, [
        [limits.passkeyChanges, customer.id],
        [limits.failedLogins, customer.identity_value],
      ]);
      const errors: FieldErrors = {};
      const name = request.body.name === undefined ? undefined : validateName(request.body.name, errors);
      if (Object.keys(errors).length > 0) throw new ProblemError('validation_failed', { errors });
      const result = await finishPasskeyRegistration(
        depsOf(request),
        relyingParty(services, request),
        request.store,
        customer,
        {
          handle: passkeyHandle(request, cookieKeys),
          response: request.body.credential as unknown as RegistrationResponseJSON,
          name,
          currentPassword: request.body.current_password,
          userAgent: request.headers['user-agent'],
        },
      );
      clearPasskeyCookie(reply, secure);
      if (!result.ok) {
        const fields = result.error === 'credential_refused' ? { credential: [credentialRefused] } : undefined;
        throw refusal(request, registrationOutcomes, { fields, ...result }, { customerId: customer.id });
      }
      forget(request, limits.failedLogins, customer.identity_value);
      audit(request, 'passkey.added', customer.id, { passkey: result.value.id });
      reply.code(201);
      return result.value;
    });

    app.get('/passkeys', list, async (request) => ({
      passkeys: await listPasskeys(storeDbOf(services, request), accountOf(request).customer.id),
    }));

    app.post('/passkeys/:id/delete', removal, async (request) => {
      const { customer } = accountOf(request);
      await limit(request, [[limits.passkeyChanges, customer.id]]);
      if (!(await removePasskey(storeDbOf(services, request), customer.id, request.params.id)))
        throw new ProblemError('not_found');
      audit(request, 'passkey.removed', customer.id, { passkey: request.params.id, by: 'customer' });
      return { status: 'deleted' as const };
    });
  };
}
