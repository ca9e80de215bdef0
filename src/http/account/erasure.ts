import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { wrongCurrentPassword } from '../../auth/account.js';
import { deleteAccountWithPassword, exportAccount } from '../../auth/erasure.js';
import { accountOf, describe, routeKit, type KitSource, type Outcomes } from '../kit.js';
import { limits } from '../rate-limit.js';
import {
  AccountExport,
  bodyProblemResponses,
  customerProblems,
  DeleteAccountBody,
  DeletedStatus,
  problemResponses,
} from '../schemas.js';

const exportOutcomes: Outcomes<'gone'> = { gone: { problem: 'unauthenticated' } };

const deleteOutcomes: Outcomes<'wrong_password' | 'gone'> = {
  // A guess at the password from a signed-in session, recorded as a failed login is.
  wrong_password: {
    problem: 'validation_failed',
    audit: { event: 'reauthentication.failed', details: { operation: 'account.delete' } },
  },
  gone: { problem: 'unauthenticated' },
};

const session = { session: true };

/** The signed-in customer's own data: export it, or delete the account. */
export function erasureRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics } = services;
  const { deps, audit, limit, refusal, reauthenticated, signOut } = routeKit(services);

  return async (app) => {
    app.get(
      '/account/export',
      {
        config: session,
        schema: {
          ...describe(
            'exportAccount',
            'Export my data',
            'The signed-in customer, their sessions and their audit events as a JSON attachment, and nothing about anyone else. At most one per minute per customer.',
            session,
          ),
          response: { 200: AccountExport, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request, reply) => {
        const { customer, sessionId } = accountOf(request);
        await limit(request, [[limits.accountExports, customer.id]]);
        const exported = await exportAccount(deps, customer.id, sessionId);
        if (!exported.ok) throw refusal(request, exportOutcomes, exported);
        audit(request, 'account.exported', customer.id);
        metrics.accountRequests.inc({ operation: 'export' });
        const day = exported.value.exported_at.slice(0, 10);
        reply.header('content-disposition', `attachment; filename="account-export-${day}.json"`);
        return exported.value;
      },
    );

    app.post(
      '/account/delete',
      {
        config: session,
        schema: {
          ...describe(
            'deleteAccount',
            'Delete my account',
            'Checks current_password like a login, then removes the customer, their sessions and codes, drops their unsent messages, strips their identity from their audit events and sends one notice. Clears the session cookie and issues a fresh XSRF-TOKEN. The identity can register again at once.',
            session,
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
        const { customer } = accountOf(request);
        // The failed-login limit of the identity, as at login: a stolen session cannot guess on.
        const result = await reauthenticated(request, customer, () =>
          deleteAccountWithPassword(deps, request.store.name, customer, request.body.current_password),
        );
        if (!result.ok) throw refusal(request, deleteOutcomes, result, { customerId: customer.id });
        audit(request, 'account.deleted', customer.id);
        metrics.accountRequests.inc({ operation: 'delete' });
        signOut(reply);
        return { status: 'deleted' as const };
      },
    );
  };
}
