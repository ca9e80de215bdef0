import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FieldErrors } from '../../auth/deps.js';
import { finishPasskeyRegistration, startPasskeyRegistration } from '../../auth/passkey-registration.js';
import { listPasskeys, removePasskey } from '../../auth/passkeys.js';
import { validateName } from '../../auth/registration.js';
import type { Edge } from '../edge.js';
import { clearPasskeyCookie, passkeyHandle } from '../passkey-cookie.js';
import { passkeyRouteSupport, relyingParty } from '../passkey-support.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { authDeps, type AuthDepsSource, signedIn } from '../route-support.js';
import {
  credentialRefused,
  listPasskeysSchema,
  registerPasskeySchema,
  registrationOptionsSchema,
  removePasskeySchema,
} from './passkeys-schemas.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'limiter' | 'audit'>;

/** Passkeys in the account area: adding one, listing them, removing one. Each needs the session. */
export function passkeyRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { limiter, db } = services;
  const deps = authDeps(services);
  const { gate, audit, ceremonyOptions, cookieKeys, secure } = passkeyRouteSupport(services);

  return async (app) => {
    app.post(
      '/passkeys/register/options',
      {
        ...gate,
        schema: registrationOptionsSchema,
      },
      async (request, reply) => {
        const { customer } = await signedIn(services, request);
        return ceremonyOptions(request, reply, async (rp) => {
          const started = await startPasskeyRegistration(deps, rp, customer);
          if (!started.ok) throw new ProblemError('identity_unverified');
          return started.value;
        });
      },
    );

    app.post(
      '/passkeys/register',
      {
        ...gate,
        schema: registerPasskeySchema,
      },
      async (request, reply) => {
        const { customer } = await signedIn(services, request);
        // The current password is a guess like a login's: counted before the check, as one is.
        await limiter.consume(request, [
          [limits.passkeyChanges, customer.id],
          [limits.failedLogins, customer.identity_value],
        ]);
        const errors: FieldErrors = {};
        const name = request.body.name === undefined ? undefined : validateName(request.body.name, errors);
        if (Object.keys(errors).length > 0) throw new ProblemError('validation_failed', { errors });
        const result = await finishPasskeyRegistration(deps, relyingParty(services, request), request.store, customer, {
          handle: passkeyHandle(request, cookieKeys),
          response: request.body.credential as unknown as RegistrationResponseJSON,
          name,
          currentPassword: request.body.current_password,
          userAgent: request.headers['user-agent'],
        });
        clearPasskeyCookie(reply, secure);
        if (!result.ok) {
          if (result.error === 'identity_unverified') throw new ProblemError('identity_unverified');
          if (result.error === 'wrong_password') {
            audit(request, 'reauthentication.failed', customer.id, { operation: 'passkey.add' });
            throw new ProblemError('validation_failed', { errors: result.fields });
          }
          throw new ProblemError('validation_failed', { errors: { credential: [credentialRefused] } });
        }
        limiter.forget(limits.failedLogins, customer.identity_value, request.log);
        audit(request, 'passkey.added', customer.id, { passkey: result.value.id });
        reply.code(201);
        return result.value;
      },
    );

    app.get(
      '/passkeys',
      {
        ...gate,
        schema: listPasskeysSchema,
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
        schema: removePasskeySchema,
      },
      async (request) => {
        const { customer } = await signedIn(services, request);
        await limiter.consume(request, [[limits.passkeyChanges, customer.id]]);
        if (!(await removePasskey(db, customer.id, request.params.id))) throw new ProblemError('not_found');
        audit(request, 'passkey.removed', customer.id, { passkey: request.params.id, by: 'customer' });
        return { status: 'deleted' as const };
      },
    );
  };
}
