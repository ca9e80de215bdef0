/** What both entry points share: reading an answer, and the one error every failure is. */
import type { AdminProblemCode, ProblemCode, ReadinessChecks } from './api-types.js';

/**
 * The API's problem codes (the admin listener's too, for the backend entry points), plus
 * `network_error` (no answer at all) and `invalid_response` (an answer that is not the API's).
 */
export type StorefrontAuthErrorCode = ProblemCode | AdminProblemCode | 'network_error' | 'invalid_response';

export interface StorefrontAuthErrorInit {
  status: number;
  code: StorefrontAuthErrorCode;
  errors?: Record<string, string[]>;
  retryAfter?: number;
  requestId?: string;
  checks?: ReadinessChecks;
  detail?: string;
  cause?: unknown;
}

export class StorefrontAuthError extends Error {
  override readonly name = 'StorefrontAuthError';
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  readonly code: StorefrontAuthErrorCode;
  /** `validation_failed` only: each failing field (by its request name, or `body`) with its messages; otherwise empty. */
  readonly errors: Record<string, string[]>;
  /** Seconds to wait, from `Retry-After` (`rate_limited`, `service_unavailable`). */
  readonly retryAfter: number | undefined;
  /** The `X-Request-ID` of the answer, for support. */
  readonly requestId: string | undefined;
  /** `deployment_not_ready` only: which checks failed. */
  readonly checks: ReadinessChecks | undefined;

  constructor(init: StorefrontAuthErrorInit) {
    super(init.detail ?? init.code, { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.errors = init.errors ?? {};
    this.retryAfter = init.retryAfter;
    this.requestId = init.requestId;
    this.checks = init.checks;
  }
}

/** Seconds from a Retry-After header: a number of seconds or an HTTP date. */
function parseRetryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = /^\s*\d+\s*$/.test(header) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  return Number.isFinite(seconds) ? Math.max(0, Math.ceil(seconds)) : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readFieldErrors(value: unknown): Record<string, string[]> {
  if (!isRecord(value)) return {};
  const errors: Record<string, string[]> = {};
  for (const [field, messages] of Object.entries(value)) {
    if (Array.isArray(messages)) errors[field] = messages.filter((m): m is string => typeof m === 'string');
  }
  return errors;
}

/** The typed body of a 2xx; anything else becomes the StorefrontAuthError its problem document describes. */
export function answerOf<T>(response: Response, text: string): T {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (response.ok) {
    if (parsed === undefined && response.status !== 204) {
      throw new StorefrontAuthError({
        status: response.status,
        code: 'invalid_response',
        requestId,
        detail: 'The answer is not JSON.',
      });
    }
    return parsed as T;
  }
  const problem = isRecord(parsed) ? parsed : {};
  throw new StorefrontAuthError({
    status: response.status,
    code:
      typeof problem['code'] === 'string' ? (problem['code'] as ProblemCode | AdminProblemCode) : 'invalid_response',
    errors: readFieldErrors(problem['errors']),
    retryAfter: parseRetryAfter(response.headers.get('retry-after')),
    requestId: typeof problem['request_id'] === 'string' ? problem['request_id'] : requestId,
    detail: typeof problem['detail'] === 'string' ? problem['detail'] : `HTTP ${response.status}`,
    checks: isRecord(problem['checks']) ? (problem['checks'] as unknown as ReadinessChecks) : undefined,
  });
}

/** Sends one request and reads its whole answer; no answer at all is a `network_error`. */
export async function fetchAnswer(
  fetch: typeof globalThis.fetch,
  url: string,
  init: RequestInit,
): Promise<{ response: Response; text: string }> {
  try {
    const response = await fetch(url, init);
    return { response, text: await response.text() };
  } catch (error) {
    throw new StorefrontAuthError({
      status: 0,
      code: 'network_error',
      detail: 'The service could not be reached.',
      cause: error,
    });
  }
}
