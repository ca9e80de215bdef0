/**
 * `npm run dev:openid-provider`: a real OpenID provider on your machine, to try "Continue with …"
 * without a Google or Apple account. It is `oidc-provider` (OpenID-certified, the one the tests
 * use) with its development login and consent pages: any login name signs in with any password,
 * as `<name>@example.com`, email verified. Its state lives in memory; stop it with Ctrl-C.
 *
 *   npm run dev:openid-provider -- [--port 3300] [--service http://127.0.0.1:3000] [--id test] [--store default]
 *
 * (without the `--`, npm takes the options as its own). Then add it to the store (the command
 * prints the line, with --store so that it works with several stores too) and open the service's page.
 */
import { parseArgs } from 'node:util';
import { startOpenIdProvider, type ProviderAccount } from '../test/helpers/openid-provider.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '3300' },
    service: { type: 'string', default: 'http://127.0.0.1:3000' },
    id: { type: 'string', default: 'test' },
    // The slug of the store to add the provider to: the first store's is `default`.
    store: { type: 'string', default: 'default' },
  },
});
const services = [values.service, values.service.replace('127.0.0.1', 'localhost')];
const redirectUris = [...new Set(services)].map(
  (origin) => `${origin}/api/v1/customer/auth/providers/${values.id}/callback`,
);

// Every login name is an account (its subject, as oidc-provider's login page makes it): ada signs
// in as ada@example.com, verified.
const accounts = new Proxy({} as Record<string, ProviderAccount>, {
  get: (_target, login) =>
    typeof login === 'string' && /^[a-z0-9._-]{1,40}$/.test(login)
      ? { sub: login, email: `${login}@example.com`, email_verified: true, name: login }
      : undefined,
});

const provider = await startOpenIdProvider({
  port: Number(values.port),
  clients: [{ client_id: 'storefront', client_secret: 'storefront-dev-secret', redirect_uris: redirectUris }],
  accounts,
});
process.stdout.write(`An OpenID provider for development is listening at ${provider.issuer}
(any login name, any password; redirect URIs: ${redirectUris.join(', ')})

Add it to the store, then open ${values.service}/ and choose "Continue with Test provider":

  npm run cli -- store providers add --store ${values.store} --id ${values.id} --issuer ${provider.issuer} \\
    --client-id storefront --client-secret storefront-dev-secret --name "Test provider"
`);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void provider.close().then(() => process.exit(0)));
