import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { linkedProviders, unlinkProvider } from '../../auth/flows/provider-sign-in.js';
import { declareRoute, type Outcomes } from '../core/declare.js';
import { listProviders } from '../../providers/configured.js';
import { accountOf, routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { LinkedProviders, ProviderParams, UnlinkedStatus } from './schemas.js';

const unlinkOutcomes: Outcomes<'gone' | 'not_linked' | 'last_sign_in_method'> = {
  gone: { problem: 'unauthenticated' },
  not_linked: { problem: 'not_found' },
  last_sign_in_method: { problem: 'last_sign_in_method' },
};

const linkedRoute = declareRoute({
  operationId: 'linkedProviders',
  summary: 'My linked providers',
  description:
    "The sign-in providers linked to the signed-in customer's account, oldest first, with the email each gave and the provider's display name (null for a provider the store no longer offers: its link is dormant until it comes back). Link another with `GET /providers/{id}/start?link=1`.",
  session: true,
  answer: LinkedProviders,
});

const unlinkRoute = declareRoute({
  operationId: 'unlinkProvider',
  summary: 'Unlink a provider',
  description:
    "Removes the account's links to this provider. 409 last_sign_in_method when it is the last way in (no password, no passkey, no other provider): set a password first (forgot/reset). 404 not_found when the provider is not linked.",
  session: true,
  params: ProviderParams,
  answer: UnlinkedStatus,
  problems: [unlinkOutcomes],
});

/** The signed-in customer's linked providers. */
export function providerAccountRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { depsOf, audit, refusal } = routeKit(services);
  return async (app) => {
    app.get('/providers/linked', linkedRoute, async (request) => {
      const [links, offered] = await Promise.all([
        linkedProviders(depsOf(request), accountOf(request).customer.id),
        listProviders(storeDbOf(services, request)),
      ]);
      const names = new Map(offered.map((provider) => [provider.id, provider.name]));
      return { links: links.map((link) => ({ ...link, name: names.get(link.provider) ?? null })) };
    });

    app.post('/providers/:id/unlink', unlinkRoute, async (request) => {
      const { customer } = accountOf(request);
      const offered = (await listProviders(storeDbOf(services, request))).map((provider) => provider.id);
      const result = await unlinkProvider(depsOf(request), customer.id, request.params.id, offered);
      if (!result.ok) throw refusal(request, unlinkOutcomes, result, { customerId: customer.id });
      audit(request, 'provider.unlinked', customer.id, { provider: request.params.id });
      return { status: 'unlinked' as const };
    });
  };
}
