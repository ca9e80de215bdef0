import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import { deleteAccountWithPassword, exportAccount } from '../../auth/erasure.js';
import { wrongCurrentPassword } from '../../auth/account.js';
import type { Edge } from '../edge.js';
import { setCsrfCookie } from '../csrf.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { validationErrors } from '../validation.js';
import {
  AccountExport,
  bodyProblemResponses,
  customerProblems,
  DeleteAccountBody,
  DeletedStatus,
  problemResponses,
} from '../schemas.js';
import { signedIn } from '../route-support.js';

/** The parts of the edge these routes use. */
type Deps = Pick<Edge, 'db' | 'clock' | 'hasher' | 'keys' | 'config' | 'dispatcher' | 'metrics' | 'limiter' | 'audit'>;

function describe(operationId: string, summary: string, description: string) {
  return { tags: ['auth'], operationId, summary, description, security: [{ session: [] as string[] }] };
}

/** The signed-in customer's own data: export it, or delete the account. */
export function erasureRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config: settings, keys, limiter, metrics } = services;
  const sessionCookie = settings.sessionCookieName;
  const deps = {
    db: services.db,
    clock: services.clock,
    hasher: services.hasher,
    keys,
    messagesQueued: () => services.dispatcher.nudge(),
  };

  function audit(request: FastifyRequest, event: AuditEvent, customerId: string, details?: Record<string, string>) {
    services.audit({ event, customerId, clientAddress: request.ip, requestId: request.id, details });
  }

  return async (app) => {
    app.get(
      '/account/export',
      {
        schema: {
          ...describe(
            'exportAccount',
            'Export my data',
            'The signed-in customer, their sessions and their audit events as a JSON attachment, and nothing about anyone else. At most one per minute per customer.',
          ),
          response: { 200: AccountExport, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request, reply) => {
        const { customer, sessionId } = await signedIn(services, request);
        await limiter.consume(request, [[limits.accountExports, customer.id]]);
        const exported = await exportAccount(deps, customer.id, sessionId);
        if (!exported.ok) throw new ProblemError('unauthenticated');
        const data = exported.value;
        audit(request, 'account.exported', customer.id);
        metrics.accountRequests.inc({ operation: 'export' });
        const day = data.exported_at.slice(0, 10);
        reply.header('content-disposition', `attachment; filename="account-export-${day}.json"`);
        return data;
      },
    );

    app.post(
      '/account/delete',
      {
        // The session is checked before the body: without one the answer is 401, whatever was sent.
        attachValidation: true,
        schema: {
          ...describe(
            'deleteAccount',
            'Delete my account',
            'Checks current_password like a login, then removes the customer, their sessions and codes, drops their unsent messages, strips their identity from their audit events and sends one notice. Clears the session cookie and issues a fresh XSRF-TOKEN. The identity can register again at once.',
          ),
          body: DeleteAccountBody,
          response: {
            200: DeletedStatus,
            ...bodyProblemResponses(DeleteAccountBody, ['unauthenticated'], {
              fieldErrors: { current_password: [wrongCurrentPassword] },
            }),
          },
        },
      },
      async (request, reply) => {
        const { customer } = await signedIn(services, request);
        const failure = request.validationError;
        if (failure !== undefined && failure !== null) {
          throw new ProblemError('validation_failed', { errors: validationErrors(failure.validation) });
        }
        // The failed-login limit of the identity, as at login: a stolen session cannot guess on.
        await limiter.consume(request, [
          [limits.loginAttempts, request.clientKey],
          [limits.failedLogins, customer.identity_value],
        ]);
        const result = await deleteAccountWithPassword(
          deps,
          request.store.name,
          customer,
          request.body.current_password,
        );
        if (!result.ok) {
          if (result.error === 'gone') throw new ProblemError('unauthenticated');
          // A guess at the password from a signed-in session, recorded as a failed login is.
          audit(request, 'reauthentication.failed', customer.id, { operation: 'account.delete' });
          throw new ProblemError('validation_failed', { errors: result.fields });
        }
        limiter.forget(limits.failedLogins, customer.identity_value, request.log);
        audit(request, 'account.deleted', customer.id);
        metrics.accountRequests.inc({ operation: 'delete' });
        reply.clearCookie(sessionCookie, { path: '/', httpOnly: true, sameSite: 'lax', secure: settings.cookieSecure });
        setCsrfCookie(reply, keys.csrf, undefined, settings.cookieSecure);
        return { status: 'deleted' as const };
      },
    );
  };
}
