import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { HasherBusyError } from './auth/password.js';
import { BackgroundBusyError } from './background.js';
import { csrfHeaderName } from './http/csrf.js';
import { acceptedKeys } from './keys.js';
import { clientKey } from './http/client-address.js';
import { ProblemError, problemDocument, type ProblemCode, type ProblemExtras } from './http/problems.js';
import { accountRoutes } from './http/account/account.js';
import { erasureRoutes } from './http/account/erasure.js';
import { identityRoutes } from './http/account/identity.js';
import { passkeyRoutes } from './http/account/passkeys.js';
import { sessionRoutes } from './http/account/sessions.js';
import { csrfCookieRoute, platformRoutes, probeRoutes } from './http/platform/platform.js';
import { recoveryRoutes } from './http/recovery/routes.js';
import { registrationRoutes } from './http/registration/routes.js';
import { codeLoginRoutes } from './http/sign-in/code-login.js';
import { passkeyLoginRoutes } from './http/sign-in/passkey-login.js';
import { passwordSignInRoutes } from './http/sign-in/password.js';
import { openApiPages, registerOpenApi } from './http/openapi.js';
import { customerScope, probeScope, publicScope, unknownPathAnswer, type ScopeDeps } from './http/scopes.js';
import { decodeUtf8, illFormedTextErrors, validationErrors } from './http/validation.js';
import { packageVersion } from './version.js';
import type { Services } from './services.js';
import { edgeOf, type Edge } from './http/edge.js';
import { signInPage } from './web/page.js';
import { DatabaseUnavailableError } from './storage/database.js';
import type { StoreContext } from './store/store.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A health probe (see http/scopes.ts): its successful answers are neither logged nor counted in the request metrics. */
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

export const bodyLimitBytes = 16 * 1024;

/** On every answer: the request id, and headers that keep browsers from sniffing, leaking or framing. */
function setCommonHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  if (!reply.hasHeader('content-security-policy')) {
    reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  }
}
const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ProblemCode,
  extras: ProblemExtras = {},
  headers: Record<string, string | number> = {},
  detail?: string,
) {
  const body = problemDocument(code, request.id, detail, extras);
  return reply.code(body.status).headers(headers).type('application/problem+json').send(body);
}

/** Maps anything thrown to a problem document; only ProblemError text ever reaches the client. */
function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ProblemError) {
    return sendProblem(request, reply, error.code, error.extras, error.headers, error.message);
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation !== undefined) {
    return sendProblem(request, reply, 'validation_failed', { errors: validationErrors(fastifyError.validation) });
  }
  if (
    error instanceof DatabaseUnavailableError ||
    error instanceof HasherBusyError ||
    error instanceof BackgroundBusyError
  ) {
    request.log.warn({ err: error }, 'answered 503: a dependency is unavailable or saturated');
    return sendProblem(request, reply, 'service_unavailable', {}, { 'retry-after': 2 });
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return sendProblem(request, reply, 'unsupported_media_type');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return sendProblem(request, reply, 'payload_too_large');
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Unreadable bodies: malformed JSON, an empty JSON body, prototype poisoning.
    return sendProblem(request, reply, 'validation_failed', { errors: { body: ['Must be a valid JSON object.'] } });
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendProblem(request, reply, 'internal_error');
}

const gatedStore = Symbol('store');

export async function buildApp(built: Services): Promise<FastifyInstance> {
  const services = edgeOf(built);
  const { config } = services;
  const app = createFastify(services);

  app.decorate('draining', false);
  // Set by the customer scope's store gate (http/scopes.ts); read anywhere else, it is a bug.
  app.decorateRequest('store', {
    getter(this: FastifyRequest & { [gatedStore]?: StoreContext }) {
      const store = this[gatedStore];
      if (store === undefined) throw new Error(`request.store read outside the store gate (${this.url})`);
      return store;
    },
    setter(this: FastifyRequest & { [gatedStore]?: StoreContext }, store: StoreContext) {
      this[gatedStore] = store;
    },
  });
  app.decorateRequest('clientKey', '');
  app.decorateRequest('account', null);
  acceptJsonOnly(app);
  const unknownPath = unknownPathAnswer(app);

  await app.register(cookie);
  await app.register(cors, {
    origin: config.corsAllowedOrigins,
    credentials: true,
    methods: ['GET', 'POST'],
    allowedHeaders: ['content-type', csrfHeaderName, 'x-request-id'],
    exposedHeaders: ['x-request-id', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'],
    maxAge: 600,
    // A plain OPTIONS (no Origin or requested method) is answered 204 rather than with a text error.
    strictPreflight: false,
  });

  addRequestHooks(app, services);
  app.setErrorHandler(handleError);
  const scopes: ScopeDeps = {
    services,
    csrf: {
      keys: acceptedKeys(services.keys, 'csrf'),
      allowedOrigins: new Set(config.corsAllowedOrigins),
      sessionCookieName: config.sessionCookieName,
    },
    unknownPath,
  };

  await registerRoutes(app, services, scopes);
  return app;
}

/** Fastify with the service's options: its logger, body limit, proxy trust, request ids and validator. */
function createFastify(services: Edge) {
  const { config } = services;
  return Fastify<Server, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: services.logger,
    // One line per request is written by the onResponse hook below instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: bodyLimitBytes,
    // A request read while the service shuts down is served like any other (with Connection:
    // close), never refused: the listener is closed by then, so no new ones arrive.
    return503OnClosing: false,
    // Behind a proxy, trust only the hop next to us: the address it saw, not what the client claims.
    trustProxy: config.trustProxy ? (_address: string, hop: number) => hop < 1 : false,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && requestIdPattern.test(given) ? given : randomUUID();
    },
    // Requests Fastify refuses before routing (a path whose percent-encoding does not decode) get a
    // problem document like everything else, not the framework's own error body.
    frameworkErrors: (_error, request, reply) => {
      setCommonHeaders(request, reply);
      void sendProblem(request, reply, 'not_found');
    },
    ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();
}

type App = ReturnType<typeof createFastify>;

/**
 * Only JSON bodies are accepted; Fastify would otherwise also parse text/plain. An empty JSON body
 * counts as no body, since clients send the header on body-less POSTs such as logout. Every body is
 * read strictly as UTF-8 and every string in it must be well-formed Unicode, here once for all
 * routes, so that no two different inputs reach a hash or the database as one.
 */
function acceptJsonOnly(app: App): void {
  app.removeContentTypeParser(['text/plain', 'application/json']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, bytes, done) => {
    const text = decodeUtf8(bytes as Buffer);
    if (text === null) {
      done(new ProblemError('validation_failed', { errors: { body: ['Must be UTF-8 text.'] } }), undefined);
    } else if (text === '') {
      done(null, undefined);
    } else {
      parseJson(request, text, (error, body) => {
        const errors = error ? {} : illFormedTextErrors(body);
        if (Object.keys(errors).length > 0) done(new ProblemError('validation_failed', { errors }), undefined);
        else done(error, body);
      });
    }
  });
}

/** The client key, the common headers, the draining signal and the request log, for every request. */
function addRequestHooks(app: App, services: Edge): void {
  // The scopes' own hooks (http/scopes.ts) run after this one.
  app.addHook('onRequest', async (request) => {
    request.clientKey = clientKey(request.ip);
  });

  app.addHook('onSend', async (request, reply) => {
    setCommonHeaders(request, reply);
    // Draining: a keep-alive client reconnects (through the balancer, to another instance).
    if (app.draining) reply.header('connection', 'close');
  });

  app.addHook('onResponse', async (request, reply) => {
    // Probes that answered as expected would only drown the log and the metrics; a refusal or a
    // 503 from readiness is worth a line.
    if (request.routeOptions.config.probe === true && reply.statusCode < 400) return;
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode };
    services.metrics.requests.inc(labels);
    services.metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? null,
        url: request.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request',
    );
  });
}

/** Every scope and its routes, in the order the OpenAPI document lists them. */
async function registerRoutes(app: App, services: Edge, scopes: ScopeDeps): Promise<void> {
  const { config } = services;
  await registerOpenApi(app, config, packageVersion);
  await app.register(
    publicScope(scopes, async (scope) => {
      await scope.register(platformRoutes(services), { prefix: '/api/v1' });
      await scope.register(openApiPages);
      if (config.signInPage) await scope.register(signInPage(services));
    }),
  );
  await app.register(probeScope(scopes, probeRoutes(services)), { prefix: '/api/v1' });
  // The customer's calls, in the order the OpenAPI document lists them.
  const customerRoutes = [
    registrationRoutes,
    recoveryRoutes,
    passwordSignInRoutes,
    identityRoutes,
    erasureRoutes,
    accountRoutes,
    sessionRoutes,
    codeLoginRoutes,
    passkeyRoutes,
    passkeyLoginRoutes,
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
