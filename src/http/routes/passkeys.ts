import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import type { FieldErrors } from '../../auth/deps.js';
import { loginWithPasskey, startPasskeyLogin } from '../../auth/passkey-login.js';
import { finishPasskeyRegistration, startPasskeyRegistration } from '../../auth/passkey-registration.js';
import { listPasskeys, removePasskey } from '../../auth/passkeys.js';
import { validateName } from '../../auth/registration.js';
import type { RelyingParty } from '../../auth/relying-party.js';
import { isOnRpId } from '../../config.js';
import { acceptedKeys } from '../../keys.js';
import type { Services } from '../../services.js';
import { ownOrigin } from '../csrf.js';
import { clearPasskeyCookie, passkeyHandle, setPasskeyCookie } from '../passkey-cookie.js';
import {
  PasskeyCreationOptions,
  Passkey,
  PasskeyList,
  PasskeyLoginBody,
  PasskeyRegisterBody,
  PasskeyRequestOptions,
} from '../passkey-schemas.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { authDeps, signedIn } from '../route-support.js';
import { AuthSession, bodyProblemResponses, customerProblems, DeletedStatus, problemResponses } from '../schemas.js';
import { reportSignInNotice, startSessionCookies } from '../session-cookie.js';

export const passkeyLoginRefusedDetail = 'The passkey could not sign you in.';
const credentialRefused = 'Could not be verified for this account and page; ask for new options and try again.';

function describe(operationId: string, summary: string, description: string, session: boolean) {
  return { tags: ['auth'], operationId, summary, description, security: session ? [{ session: [] }] : [] };
}

/**
 * The relying party of this request: configured RP ID and origins, the store's name, and, when
 * WEBAUTHN_ORIGINS is not set, the origin the request was addressed to if its host is on the RP ID.
 */
export function relyingParty(services: Pick<Services, 'config'>, request: FastifyRequest): RelyingParty {
  const { rpId, origins, includeOwnOrigin } = services.config.webauthn;
  const own = includeOwnOrigin ? ownOrigin(request) : undefined;
  const ownUsable = own !== undefined && isOnRpId(new URL(own).hostname, rpId) && !origins.includes(own);
  return { id: rpId, name: request.store.name, origins: ownUsable ? [...origins, own] : origins };
}

/** Passkeys (WebAuthn): adding and removing them in the account area, and signing in with one. */
export function passkeyRoutes(services: Services): FastifyPluginAsyncTypebox {
  const { config: settings, keys, metrics, limiter, db } = services;
  const deps = authDeps(services);
  const cookieKeys = acceptedKeys(keys, 'csrf');
  const secure = settings.cookieSecure;

  function audit(
    request: FastifyRequest,
    event: AuditEvent,
    customerId: string | null,
    details: Record<string, string>,
  ) {
    services.audit({ event, customerId, clientAddress: request.ip, requestId: request.id, details });
  }

  // Behind the store gate, no-store; with the store setting off every path answers 404 before
  // the session or the body is looked at, as if it did not exist.
  const config = { customer: true };
  async function requireSetting(request: FastifyRequest) {
    if (!request.store.passkeys) throw new ProblemError('not_found');
  }
  const off = ['not_found'] as const;

  /** Counts an options call, starts its ceremony and gives the browser the cookie naming the challenge. */
  async function ceremonyOptions<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    start: (rp: RelyingParty) => Promise<{ options: T; handle: string }>,
  ): Promise<T> {
    await limiter.consume([[limits.passkeyChallenges, request.clientKey]]);
    const { options, handle } = await start(relyingParty(services, request));
    setPasskeyCookie(reply, keys.csrf, handle, secure);
    return options;
  }

  return async (app) => {
    app.post(
      '/passkeys/register/options',
      {
        config,
        preValidation: requireSetting,
        schema: {
          ...describe(
            'passkeyRegistrationOptions',
            'Start adding a passkey',
            'Options for `navigator.credentials.create` (resident key required, user verification preferred), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser.',
            true,
          ),
          response: {
            200: PasskeyCreationOptions,
            ...problemResponses(...customerProblems, 'unauthenticated', ...off),
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
        config,
        preValidation: requireSetting,
        schema: {
          ...describe(
            'registerPasskey',
            'Add a passkey',
            "Verifies the browser's answer against this browser's challenge (spent whatever the outcome) and keeps the passkey. A wrong origin or RP ID, a used, expired or other browser's challenge, or a credential already registered is a 422 on `credential`.",
            true,
          ),
          body: PasskeyRegisterBody,
          response: {
            201: Passkey,
            ...bodyProblemResponses(PasskeyRegisterBody, ['unauthenticated', ...off], {
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
          customer.id,
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
        config,
        preValidation: requireSetting,
        schema: {
          ...describe('listPasskeys', 'List my passkeys', "The signed-in customer's passkeys, newest first.", true),
          response: { 200: PasskeyList, ...problemResponses(...customerProblems, 'unauthenticated', ...off) },
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
        config,
        preValidation: requireSetting,
        schema: {
          ...describe(
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

    app.post(
      '/passkeys/login/options',
      {
        config,
        preValidation: requireSetting,
        schema: {
          ...describe(
            'passkeyLoginOptions',
            'Start signing in with a passkey',
            'Options for `navigator.credentials.get` with no credentials listed (discoverable passkeys; also for conditional UI), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser.',
            false,
          ),
          response: { 200: PasskeyRequestOptions, ...problemResponses(...customerProblems, ...off) },
        },
      },
      async (request, reply) => {
        return ceremonyOptions(request, reply, (rp) => startPasskeyLogin(deps, rp));
      },
    );

    app.post(
      '/passkeys/login',
      {
        config,
        preValidation: requireSetting,
        schema: {
          ...describe(
            'loginWithPasskey',
            'Log in with a passkey',
            "Verifies the assertion against this browser's challenge (spent whatever the outcome) and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN, as a login does; sets verified_at when it was null. Counts against the login limit per address. An unknown passkey, a bad signature, a reused, expired or other browser's challenge, a wrong origin or RP ID and a signature counter that went backwards are one identical 401.",
            false,
          ),
          body: PasskeyLoginBody,
          response: {
            200: AuthSession,
            ...bodyProblemResponses(PasskeyLoginBody, ['unauthenticated', ...off], {
              details: { unauthenticated: passkeyLoginRefusedDetail },
            }),
          },
        },
      },
      async (request, reply) => {
        await limiter.consume([[limits.loginAttempts, request.clientKey]]).catch((error: unknown) => {
          metrics.logins.inc({ outcome: 'throttled' });
          throw error;
        });
        const result = await loginWithPasskey(
          deps,
          request.store,
          relyingParty(services, request),
          passkeyHandle(request, cookieKeys),
          request.body.credential as unknown as AuthenticationResponseJSON,
          request.cookies[settings.sessionCookieName],
          { userAgent: request.headers['user-agent'], address: request.ip },
        );
        clearPasskeyCookie(reply, secure);
        metrics.logins.inc({ outcome: result.ok ? 'success' : 'failure' });
        if (!result.ok) {
          const details: Record<string, string> = { method: 'passkey', reason: result.reason };
          if (result.passkeyId !== undefined) details['passkey'] = result.passkeyId;
          audit(request, 'login.failed', result.customerId, details);
          // One answer for every cause: it must not tell a stranger's passkey from a stale challenge.
          throw new ProblemError('unauthenticated', {}, {}, passkeyLoginRefusedDetail);
        }
        audit(request, 'login.succeeded', result.customer.id, { method: 'passkey' });
        reportSignInNotice(request.log, metrics, result.signInNotice);
        startSessionCookies(reply, settings, keys.csrf, result.sessionId);
        return { auth_type: 'session' as const, customer: result.customer };
      },
    );
  };
}
