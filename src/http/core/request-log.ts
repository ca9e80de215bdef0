import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { noStoreLabel, type Metrics } from '../../metrics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The `store` label of the request's metrics (Metrics.storeLabels): set by the store gate
     * (http/core/scopes.ts) from the request's store, `""` on every request no store gate named one for.
     */
    storeLabel: string;
  }
}

/*
 * The one line each listener writes per request, and the only form in which a request's URL
 * reaches the log. Query strings carry what no log line may hold: an identity (the admin customer
 * lookup), a session's XSRF token (a provider link's start), a provider's code and state (its way
 * back). So no query value is ever written, and only the names the route declares: a client's
 * own parameter names are as free as its values.
 */

const redactedValue = '[redacted]';

/** A request as Fastify or Node hands it over: only Fastify's knows its route. */
interface LoggableRequest {
  method?: string;
  url?: string;
  routeOptions?: { schema?: { querystring?: unknown } };
}

/** `/path?name=[redacted]&…`: the path, and each parameter the route declares with its value replaced. */
export function loggedUrl(request: LoggableRequest): string {
  const [path = '', query] = (request.url ?? '').split('?', 2);
  if (query === undefined) return path;
  const properties = (request.routeOptions?.schema?.querystring as { properties?: object } | undefined)?.properties;
  const declared = new Set(Object.keys(properties ?? {}));
  const names = [...new Set(new URLSearchParams(query).keys())].filter((name) => declared.has(name));
  return names.length === 0 ? path : `${path}?${names.map((name) => `${name}=${redactedValue}`).join('&')}`;
}

/** What pino's `req` serializer writes, should a line ever log a request whole: never its headers or query values. */
export function requestForLog(request: LoggableRequest): { method: string | undefined; url: string } {
  return { method: request.method, url: loggedUrl(request) };
}

export interface RequestLogOptions {
  /** Requests neither logged nor counted (the customer app's successful health probes). */
  skip?: (request: FastifyRequest, reply: FastifyReply) => boolean;
  /** Fields of this listener's own, written before the common ones (none: undefined). */
  fields?: (request: FastifyRequest) => Record<string, unknown> | undefined;
}

/**
 * One line per answered request (method, route, url, status, ms) and the request metrics, labelled
 * with the request's `storeLabel`, which this decorates every request of `app` with.
 */
export function addRequestLog(
  app: FastifyInstance,
  metrics: Pick<Metrics, 'requests' | 'requestDuration'>,
  { skip, fields }: RequestLogOptions = {},
): void {
  app.decorateRequest('storeLabel', noStoreLabel);
  app.addHook('onResponse', async function requestLog(request, reply) {
    if (skip?.(request, reply) === true) return;
    const route = request.routeOptions.url ?? null;
    const labels = {
      method: request.method,
      route: route ?? 'unmatched',
      status: reply.statusCode,
      store: request.storeLabel,
    };
    metrics.requests.inc(labels);
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
    request.log.info(
      {
        ...fields?.(request),
        method: request.method,
        route,
        url: loggedUrl(request),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request',
    );
  });
}
