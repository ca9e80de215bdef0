import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { HasherBusyError } from '../../auth/rules/password.js';
import { BackgroundBusyError } from '../../background.js';
import { DatabaseUnavailableError } from '../../storage/database.js';
import { setLanguageHeaders } from './language-headers.js';
import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import { negotiate } from '../../i18n/negotiate.js';
import { baseLanguage } from '../../i18n/strings.js';
import {
  ProblemError,
  problemDocument,
  reasonPhrases,
  type AnyProblemCode,
  type FieldMessage,
  type ProblemExtras,
} from './problems.js';
import { decodeUtf8, illFormedTextErrors, validationErrors } from './validation.js';
import { typedDigitsKeyword } from './typed-digits.js';
import { requestForLog } from './request-log.js';

/*
 * What both listeners (the customer app and the admin app) are made of, so their wire format
 * cannot drift apart: request ids, the headers on every answer, JSON-only bodies read strictly,
 * and the problem document every failure becomes.
 */

export const bodyLimitBytes = 16 * 1024;

/** On every answer: the request id, and headers that keep browsers from sniffing, leaking or framing. */
export function setCommonHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  if (!reply.hasHeader('content-security-policy')) {
    reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  }
}
const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: AnyProblemCode,
  extras: ProblemExtras = {},
  headers: Record<string, string | number> = {},
  detail?: FieldMessage,
) {
  // Undefined on a request Fastify refused before its decorations (an undecodable URL).
  const languages = request.answerLanguages ?? null;
  const language = languages === null ? baseLanguage : negotiate(request.headers['accept-language'], languages);
  const body = problemDocument(code, request.id, language, detail, extras);
  const reason = reasonPhrases[body.status];
  if (reason !== undefined) reply.raw.statusMessage = reason;
  if (languages === null) reply.header('content-language', language);
  else setLanguageHeaders(reply, language);
  return reply.code(body.status).headers(headers).type('application/problem+json').send(body);
}

/** Maps anything thrown to a problem document; only ProblemError text ever reaches the client. */
export function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ProblemError) {
    return sendProblem(request, reply, error.code, error.extras, error.headers, error.detail);
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
    return sendProblem(request, reply, 'validation_failed', { errors: { body: [fieldPhrase('json_body')] } });
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendProblem(request, reply, 'internal_error');
}

/**
 * Fastify with the service's options: its logger, body limit, proxy trust, request ids and
 * validator. `trustProxy`: trust only the hop next to us, the address it saw, not what the client claims.
 */
export function createServiceFastify(logger: FastifyBaseLogger, { trustProxy }: { trustProxy: boolean }) {
  return Fastify<Server, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    // A request logged whole shows no header and no query value (http/core/request-log.ts).
    loggerInstance: logger.child({}, { serializers: { req: requestForLog } }),
    // Each app writes one line per request from an onResponse hook instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: bodyLimitBytes,
    // A request read while the service shuts down is served like any other (with Connection:
    // close), never refused: the listener is closed by then, so no new ones arrive.
    return503OnClosing: false,
    trustProxy: trustProxy ? (_address: string, hop: number) => hop < 1 : false,
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
    ajv: {
      customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false },
      plugins: [typedDigitsKeyword],
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
}

export type ServiceFastify = ReturnType<typeof createServiceFastify>;

/**
 * Only JSON bodies are accepted; Fastify would otherwise also parse text/plain. An empty JSON body
 * counts as no body, since clients send the header on body-less POSTs such as logout. Every body is
 * read strictly as UTF-8 and every string in it must be well-formed Unicode, here once for all
 * routes, so that no two different inputs reach a hash or the database as one.
 */
export function acceptJsonOnly(app: ServiceFastify, alsoAs: string[] = []): void {
  app.removeContentTypeParser(['text/plain', 'application/json']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(['application/json', ...alsoAs], { parseAs: 'buffer' }, (request, bytes, done) => {
    const text = decodeUtf8(bytes as Buffer);
    if (text === null) {
      done(new ProblemError('validation_failed', { errors: { body: [fieldPhrase('utf8')] } }), undefined);
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
