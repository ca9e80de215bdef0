import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FieldErrors } from '../../auth/deps.js';
import { finishPasskeyRegistration, startPasskeyRegistration } from '../../auth/passkey-registration.js';
import { listPasskeys, removePasskey } from '../../auth/passkeys.js';
import { validateName } from '../../auth/registration.js';
import { accountOf, routeKit, type KitSource, type Outcomes } from '../kit.js';
import { clearPasskeyCookie, passkeyHandle } from '../passkey-cookie.js';
import { passkeyRouteSupport, relyingParty } from '../passkey-support.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import {
  credentialRefused,
  listPasskeysSchema,
  registerPasskeySchema,
  registrationOptionsSchema,
  removePasskeySchema,
} from './passkeys-schemas.js';

const registrationOutcomes: Outcomes<'credential_refused' | 'identity_unverified' | 'wrong_password'> = {
  identity_unverified: { problem: 'identity_unverified' },
  // A guess at the password from a signed-in session, recorded as a failed login is.
  wrong_password: {
    problem: 'validation_failed',
    audit: { event: 'reauthentication.failed', details: { operation: 'passkey.add' } },
  },
  credential_refused: { problem: 'validation_failed' },
};

/** Passkeys in the account area: adding one, listing them, removing one. Each needs the session. */
export function passkeyRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { db } = services;
  const { deps, audit, limit, forget, refusal } = routeKit(services);
  const { gate, ceremonyOptions, cookieKeys, secure } = passkeyRouteSupport(services);
  const route = { config: { ...gate.config, session: true } };

  return async (app) => {
    app.post('/passkeys/register/options', { ...route, schema: registrationOptionsSchema }, async (request, reply) => {
      const { customer } = accountOf(request);
      return ceremonyOptions(request, reply, async (rp) => {
        const started = await startPasskeyRegistration(deps, rp, customer);
        if (!started.ok) throw new ProblemError('identity_unverified');
        return started.value;
      });
    });

    app.post('/passkeys/register', { ...route, schema: registerPasskeySchema }, async (request, reply) => {
      const { customer } = accountOf(request);
      // The current password is a guess like a login's: counted before the check, as one is.
      await limit(request, [
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
        const fields = result.error === 'credential_refused' ? { credential: [credentialRefused] } : undefined;
        throw refusal(request, registrationOutcomes, { fields, ...result }, { customerId: customer.id });
      }
      forget(request, limits.failedLogins, customer.identity_value);
      audit(request, 'passkey.added', customer.id, { passkey: result.value.id });
      reply.code(201);
      return result.value;
    });

    app.get('/passkeys', { ...route, schema: listPasskeysSchema }, async (request) => ({
      passkeys: await listPasskeys(db, accountOf(request).customer.id),
    }));

    app.post('/passkeys/:id/delete', { ...route, schema: removePasskeySchema }, async (request) => {
      const { customer } = accountOf(request);
      await limit(request, [[limits.passkeyChanges, customer.id]]);
      if (!(await removePasskey(db, customer.id, request.params.id))) throw new ProblemError('not_found');
      audit(request, 'passkey.removed', customer.id, { passkey: request.params.id, by: 'customer' });
      return { status: 'deleted' as const };
    });
  };
}
