import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import { Type } from '@sinclair/typebox';
import type { FieldErrors } from '../../auth/deps.js';
import { finishPasskeyRegistration, startPasskeyRegistration } from '../../auth/passkey-registration.js';
import { listPasskeys, removePasskey } from '../../auth/passkeys.js';
import { validateName } from '../../auth/registration.js';
import type { Edge } from '../edge.js';
import { clearPasskeyCookie, passkeyHandle } from '../passkey-cookie.js';
import { PasskeyCreationOptions, Passkey, PasskeyList, PasskeyRegisterBody } from '../passkey-schemas.js';
import { describePasskeyRoute, passkeyRouteSupport, relyingParty } from '../passkey-support.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { authDeps, signedIn } from '../route-support.js';
import { bodyProblemResponses, customerProblems, DeletedStatus, problemResponses } from '../schemas.js';

const credentialRefused = 'Could not be verified for this account and page; ask for new options and try again.';

/** Passkeys in the account area: adding one, listing them, removing one. Each needs the session. */
export function passkeyRoutes(services: Edge): FastifyPluginAsyncTypebox {
  const { limiter, db } = services;
  const deps = authDeps(services);
  const { gate, audit, ceremonyOptions, cookieKeys, secure } = passkeyRouteSupport(services);

  return async (app) => {
    app.post(
      '/passkeys/register/options',
      {
        ...gate,
        schema: {
          ...describePasskeyRoute(
            'passkeyRegistrationOptions',
            'Start adding a passkey',
            'Options for `navigator.credentials.create` (resident key required, user verification preferred), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser.',
            true,
          ),
          response: {
            200: PasskeyCreationOptions,
            ...problemResponses(...customerProblems, 'unauthenticated', 'not_found'),
          },
        },
      },
      async (request, reply) => {
        const { customer } = await signedIn(services, request);
        return ceremonyOptions(request, reply, (rp) => startPasskeyRegistration(deps, rp, customer));
      },
    );

    app.post(
      '/passkeys/register',
      {
        ...gate,
        schema: {
          ...describePasskeyRoute(
            'registerPasskey',
            'Add a passkey',
            "Verifies the browser's answer against this browser's challenge (spent whatever the outcome) and keeps the passkey. A wrong origin or RP ID, a used, expired or other browser's challenge, or a credential already registered is a 422 on `credential`.",
            true,
          ),
          body: PasskeyRegisterBody,
          response: {
            201: Passkey,
            ...bodyProblemResponses(PasskeyRegisterBody, ['unauthenticated', 'not_found'], {
              fieldErrors: { credential: [credentialRefused] },
            }),
          },
        },
      },
      async (request, reply) => {
        const { customer } = await signedIn(services, request);
        await limiter.consume([[limits.passkeyChanges, customer.id]]);
        const errors: FieldErrors = {};
        const name = request.body.name === undefined ? undefined : validateName(request.body.name, errors);
        if (Object.keys(errors).length > 0) throw new ProblemError('validation_failed', { errors });
        const result = await finishPasskeyRegistration(
          deps,
          relyingParty(services, request),
          request.store,
          customer,
          passkeyHandle(request, cookieKeys),
          request.body.credential as unknown as RegistrationResponseJSON,
          name,
          request.headers['user-agent'],
        );
        clearPasskeyCookie(reply, secure);
        if (!result.ok) throw new ProblemError('validation_failed', { errors: { credential: [credentialRefused] } });
        audit(request, 'passkey.added', customer.id, { passkey: result.passkey.id });
        reply.code(201);
        return result.passkey;
      },
    );

    app.get(
      '/passkeys',
      {
        ...gate,
        schema: {
          ...describePasskeyRoute(
            'listPasskeys',
            'List my passkeys',
            "The signed-in customer's passkeys, newest first.",
            true,
          ),
          response: { 200: PasskeyList, ...problemResponses(...customerProblems, 'unauthenticated', 'not_found') },
        },
      },
      async (request) => {
        const { customer } = await signedIn(services, request);
        return { passkeys: await listPasskeys(db, customer.id) };
      },
    );

    app.post(
      '/passkeys/:id/delete',
      {
        ...gate,
        schema: {
          ...describePasskeyRoute(
            'removePasskey',
            'Remove a passkey',
            "Removes the passkey with this id; it can no longer sign in. Needs the session only. An id that is not one of the caller's passkeys answers 404 whether it exists or not.",
            true,
          ),
          params: Type.Object({ id: Type.String({ description: 'The `id` of a passkey from the list.' }) }),
          response: { 200: DeletedStatus, ...problemResponses(...customerProblems, 'unauthenticated', 'not_found') },
        },
      },
      async (request) => {
        const { customer } = await signedIn(services, request);
        await limiter.consume([[limits.passkeyChanges, customer.id]]);
        if (!(await removePasskey(db, customer.id, request.params.id))) throw new ProblemError('not_found');
        audit(request, 'passkey.removed', customer.id, { passkey: request.params.id, by: 'customer' });
        return { status: 'deleted' as const };
      },
    );
  };
}
