import { twoFactorRoutes } from './http/two-factor/account.js';
import { secondStepSignInRoutes } from './http/two-factor/sign-in.js';
import cookie from '@fastify/cookie';
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { csrfHeaderName } from './http/core/csrf.js';
import { acceptedKeys } from './keys.js';
import { clientKey } from './http/core/client-address.js';
import { acceptJsonOnly, createServiceFastify, handleError, setCommonHeaders } from './http/core/common.js';
import { addRequestLog, loggedUrl } from './http/core/request-log.js';
import { accountRoutes } from './http/account/account.js';
import { erasureRoutes } from './http/account/erasure.js';
import { identityRoutes } from './http/account/identity.js';
import { passkeyRoutes } from './http/passkeys/account.js';
import { providerAccountRoutes } from './http/providers/account.js';
import { sessionRoutes } from './http/account/sessions.js';
import { csrfCookieRoute, platformRoutes, probeRoutes } from './http/operations/platform.js';
import { recoveryRoutes } from './http/recovery/routes.js';
import { registrationRoutes } from './http/registration/routes.js';
import { codeLoginRoutes } from './http/sign-in/code-login.js';
import { forwardAuthRoutes } from './http/sign-in/forward-auth.js';
import { passkeyLoginRoutes } from './http/passkeys/sign-in.js';
import { passwordSignInRoutes } from './http/sign-in/password.js';
import { providerSignInRoutes } from './http/providers/sign-in.js';
import { openApiPages, registerOpenApi } from './http/core/openapi.js';
import {
  customerScope,
  hostOf,
  probeScope,
  publicScope,
  unknownPathAnswer,
  type ScopeDeps,
} from './http/core/scopes.js';
import { packageVersion } from './version.js';
import type { Services } from './services.js';
import { edgeOf, type Edge } from './http/core/edge.js';
import { signInPage } from './web/page.js';
import { storeOrigins, type StoreContext } from './store/store.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A health probe (see http/core/scopes.ts): its successful answers are neither logged nor counted in the request metrics. */
    probe?: boolean;
  }
  interface FastifyRequest {
    store: StoreContext;
    clientKey: string;
  }
  interface FastifyInstance {
    /** Set on shutdown: readiness answers 503 so load balancers stop sending traffic. */
    draining: boolean;
  }
}

/** The body limit of both listeners (http/core/common.ts), named here too for the documents' checks. */
export { bodyLimitBytes } from './http/core/common.js';

const gatedStore = Symbol('store');
type GatedRequest = FastifyRequest & { [gatedStore]?: StoreContext };

export async function buildApp(built: Services): Promise<FastifyInstance> {
  const services = edgeOf(built);
  const { config } = services;
  const app = createFastify(services);

  app.decorate('draining', false);
  // Set by the customer scope's store gate (http/core/scopes.ts); read anywhere else, it is a bug.
  app.decorateRequest('store', {
    getter(this: GatedRequest) {
      const store = this[gatedStore];
      if (store === undefined) throw new Error(`request.store read outside the store gate (${loggedUrl(this)})`);
      return store;
    },
    setter(this: GatedRequest, store: StoreContext) {
      this[gatedStore] = store;
    },
  });
  app.decorateRequest('clientKey', '');
  app.decorateRequest('account', null);
  app.decorateRequest('answerLanguages', null);
  acceptJsonOnly(app);
  const unknownPath = unknownPathAnswer(app);

  addRequestHooks(app, services);
  app.setErrorHandler(handleError);
  const scopes: ScopeDeps = {
    services,
    csrf: {
      keys: acceptedKeys(services.keys, 'csrf'),
      allowedOrigins: new Set(config.corsAllowedOrigins),
      cookies: config,
    },
    unknownPath,
  };

  await registerRoutes(app, services, scopes);
  return app;
}

const corsOptions = {
  credentials: true,
  methods: ['GET', 'POST'],
  // x-captcha-token: a storefront on another origin sends the store's bot check token (bot-check.ts).
  allowedHeaders: ['content-type', csrfHeaderName, 'x-request-id', 'x-captcha-token'],
  exposedHeaders: [
    'x-request-id',
    'retry-after',
    'ratelimit-limit',
    'ratelimit-remaining',
    'ratelimit-reset',
    'x-xsrf-token',
  ],
  maxAge: 600,
  // A plain OPTIONS (no Origin or requested method) is answered 204 rather than with a text error.
  strictPreflight: false,
} satisfies FastifyCorsOptions;

/**
 * CORS for the calls browsers make. The origins are the deployment's and those of the store the
 * request's host names (its hosts over https, and its allowed origins): a storefront of one store
 * is not trusted by another. Registered around the browser-facing scopes only: a probe pays nothing.
 */
async function browserCors(app: App, services: Edge): Promise<void> {
  const { config } = services;
  const deployment = { ...corsOptions, origin: config.corsAllowedOrigins };
  await app.register(cors, {
    delegator: (request, callback) => {
      // Without an Origin there is nothing to allow, and nothing to wait on the stores for.
      if (request.headers.origin === undefined) return callback(null, deployment);
      services.store.resolve(hostOf(request)).then(
        (store) => callback(null, { ...deployment, origin: [...config.corsAllowedOrigins, ...storeOrigins(store)] }),
        // The stores cannot be read: the deployment's origins still hold; the store gate answers the rest.
        () => callback(null, deployment),
      );
    },
  });
}

/** Fastify with the service's options (http/core/common.ts), trusting a proxy when TRUST_PROXY says so. */
function createFastify(services: Edge) {
  return createServiceFastify(services.logger, { trustProxy: services.config.trustProxy });
}

type App = ReturnType<typeof createFastify>;

/** The client key, the common headers, the draining signal and the request log, for every request. */
function addRequestHooks(app: App, services: Edge): void {
  // The scopes' own hooks (http/core/scopes.ts) run after this one.
  app.addHook('onRequest', async function clientKeyOf(request) {
    request.clientKey = clientKey(request.ip);
  });

  app.addHook('onSend', async function commonHeaders(request, reply) {
    setCommonHeaders(request, reply);
    // Draining: a keep-alive client reconnects (through the balancer, to another instance).
    if (app.draining) reply.header('connection', 'close');
  });

  addRequestLog(app, services.metrics, {
    // Probes that answered as expected would only drown the log and the metrics; a refusal or a
    // 503 from readiness is worth a line.
    skip: (request, reply) => request.routeOptions.config.probe === true && reply.statusCode < 400,
    // A request the store gate named a store for: its slug (also past METRICS_STORE_LABELS, when
    // its metrics say `_other`) and the host it came by.
    fields: (request) => {
      const store = (request as GatedRequest)[gatedStore];
      return store === undefined ? undefined : { store: store.slug, host: hostOf(request) };
    },
  });
}

/** Every scope and its routes, in the order the OpenAPI document lists them. */
async function registerRoutes(app: App, services: Edge, scopes: ScopeDeps): Promise<void> {
  const { config } = services;
  await registerOpenApi(app, config, packageVersion);
  // A load balancer is no browser: the probes run none of the browser scopes' hooks, neither
  // cookies nor CORS (test/http/core/request-budget.test.ts holds each kind of call to its hooks).
  await app.register(probeScope(scopes, probeRoutes(services)), { prefix: '/api/v1' });
  await app.register(async (browser) => {
    await browser.register(cookie);
    await browserCors(browser, services);
    await browserRoutes(browser, services, scopes);
  });
}

/** What browsers call: the platform's pages and documents, and the customer's calls. */
async function browserRoutes(app: App, services: Edge, scopes: ScopeDeps): Promise<void> {
  const { config } = services;
  await app.register(
    publicScope(scopes, async (scope) => {
      await scope.register(platformRoutes(services), { prefix: '/api/v1' });
      await scope.register(openApiPages);
      if (config.signInPage) await scope.register(signInPage(services));
    }),
  );
  // The customer's calls, in the order the OpenAPI document lists them.
  const customerRoutes = [
    registrationRoutes,
    recoveryRoutes,
    passwordSignInRoutes,
    forwardAuthRoutes,
    identityRoutes,
    erasureRoutes,
    accountRoutes,
    sessionRoutes,
    codeLoginRoutes,
    passkeyRoutes,
    passkeyLoginRoutes,
    twoFactorRoutes,
    secondStepSignInRoutes,
    providerSignInRoutes,
    providerAccountRoutes,
  ];
  // The prefix's trailing slash: the scope answers every unknown path under /api/v1/customer/.
  await app.register(
    customerScope(
      scopes,
      async (scope) => {
        for (const routes of customerRoutes) await scope.register(routes(services), { prefix: 'auth' });
      },
      { answersUnknownPaths: true },
    ),
    { prefix: '/api/v1/customer/' },
  );
  // The CSRF cookie is a customer call too: behind the store gate, never stored.
  await app.register(
    customerScope(
      scopes,
      async (scope) => {
        await scope.register(csrfCookieRoute(services, '/api/v1/csrf-cookie'));
        await scope.register(csrfCookieRoute(services, '/sanctum/csrf-cookie'));
      },
      { answersUnknownPaths: false },
    ),
  );
}
