import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { deleteAccountWithPassword, exportAccount } from '../../auth/flows/erasure.js';
import { wrongCurrentPassword } from '../../auth/rules/reauthentication.js';
import { declareRoute, wrongPasswordOutcome, type Outcomes } from '../core/declare.js';
import { accountOf, routeKit, type KitSource } from '../core/kit.js';
import { limits } from '../core/rate-limit.js';
import { AccountExport, DeleteAccountBody, DeletedStatus } from '../core/schemas.js';

const exportOutcomes: Outcomes<'gone'> = { gone: { problem: 'unauthenticated' } };

const deleteOutcomes: Outcomes<'wrong_password' | 'gone'> = {
  wrong_password: wrongPasswordOutcome('account.delete'),
  gone: { problem: 'unauthenticated' },
};

const exportAccountRoute = declareRoute({
  operationId: 'exportAccount',
  summary: 'Export my data',
  description:
    'The signed-in customer, their sessions and their audit events as a JSON attachment, and nothing about anyone else. At most one per minute per customer.',
  session: true,
  answer: AccountExport,
  problems: [exportOutcomes],
});

const deleteAccountRoute = declareRoute({
  operationId: 'deleteAccount',
  summary: 'Delete my account',
  description:
    'Checks current_password like a login, then removes the customer, their sessions and codes, drops their unsent messages, strips their identity from their audit events and sends one notice. Clears the session cookie and issues a fresh XSRF-TOKEN. The identity can register again at once.',
  session: true,
  body: DeleteAccountBody,
  answer: DeletedStatus,
  problems: [deleteOutcomes],
  examples: { fieldErrors: { current_password: [wrongCurrentPassword] } },
});

/** The signed-in customer's own data: export it, or delete the account. */
export function erasureRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics } = services;
  const { depsOf, audit, limit, refusal, reauthenticated, signOut } = routeKit(services);

  return async (app) => {
    app.get('/account/export', exportAccountRoute, async (request, reply) => {
      const { customer, sessionId } = accountOf(request);
      await limit(request, [[limits.accountExports, customer.id]]);
      const exported = await exportAccount(depsOf(request), customer.id, sessionId);
      if (!exported.ok) throw refusal(request, exportOutcomes, exported);
      audit(request, 'account.exported', customer.id);
      metrics.accountRequests.inc({ operation: 'export' });
      const day = exported.value.exported_at.slice(0, 10);
      reply.header('content-disposition', `attachment; filename="account-export-${day}.json"`);
      return exported.value;
    });

    app.post('/account/delete', deleteAccountRoute, async (request, reply) => {
      const { customer } = accountOf(request);
      // The failed-login limit of the identity, as at login: a stolen session cannot guess on.
      const result = await reauthenticated(request, customer, () =>
        deleteAccountWithPassword(depsOf(request), request.store, customer, request.body.current_password),
      );
      if (!result.ok) throw refusal(request, deleteOutcomes, result, { customerId: customer.id });
      audit(request, 'account.deleted', customer.id);
      metrics.accountRequests.inc({ operation: 'delete' });
      signOut(request, reply);
      return { status: 'deleted' as const };
    });
  };
}
