import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { addFieldError, type FieldErrors } from '../../auth/deps.js';
import { acceptedKeys, unseal } from '../../keys.js';
import type { BotCheck, BotCheckOperation, BotCheckProvider } from '../../store/store.js';
import type { Edge } from './edge.js';
import { ProblemError } from './problems.js';
import { maxCaptchaTokenLength } from './schemas.js';

/** The providers' documented siteverify addresses; a store's `verify_url` replaces its own. */
export const siteverifyUrls: Record<BotCheckProvider, string> = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
  recaptcha: 'https://www.google.com/recaptcha/api/siteverify',
};

const siteverifyTimeoutMs = 5_000;
/** What a shopper is asked to wait while the provider cannot answer. */
const siteverifyRetryAfterSeconds = 5;

// The provider's own trouble, or the store's key set wrong: nothing the shopper's token says.
const notTheTokens = new Set([
  'internal-error',
  'missing-input-secret',
  'invalid-input-secret',
  'sitekey-secret-mismatch',
]);

export type SiteverifyVerdict = 'passed' | 'failed' | 'unavailable';

/**
 * Asks the provider about a token, as all three document it: a form-encoded POST of `secret`,
 * `response` and `remoteip`, answered `{ "success": true|false, "error-codes": [...] }`. Any other
 * answer, a slow one, or an error code that is not about the token is `unavailable`.
 */
export async function siteverify(
  url: string,
  secret: string,
  token: string,
  remoteIp: string,
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>,
): Promise<SiteverifyVerdict> {
  let answer: unknown;
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret, response: token, remoteip: remoteIp }).toString(),
      redirect: 'error',
      signal: AbortSignal.timeout(siteverifyTimeoutMs),
    });
    if (!response.ok) {
      log.warn({ status: response.status }, 'bot check: siteverify answered an error status');
      return 'unavailable';
    }
    answer = await response.json();
  } catch (error) {
    // The error's name only: an undici error may quote the request, whose body holds the secret.
    log.warn({ reason: error instanceof Error ? error.name : 'unknown' }, 'bot check: siteverify unreachable');
    return 'unavailable';
  }
  if (typeof answer !== 'object' || answer === null || typeof (answer as { success?: unknown }).success !== 'boolean') {
    log.warn('bot check: siteverify answered no verdict');
    return 'unavailable';
  }
  const { success, 'error-codes': codes } = answer as { success: boolean; 'error-codes'?: unknown };
  if (success) return 'passed';
  const named = Array.isArray(codes) ? codes.filter((code): code is string => typeof code === 'string') : [];
  const problem = named.filter((code) => notTheTokens.has(code));
  if (problem.length > 0) {
    log.error({ error_codes: problem }, 'bot check: siteverify refused the store’s keys or failed itself');
    return 'unavailable';
  }
  return 'failed';
}

/** The token a request carries: `captcha_token` in its body, else the `X-Captcha-Token` header. */
function tokenOf(request: FastifyRequest): string | undefined {
  const body = request.body as { captcha_token?: unknown } | null | undefined;
  const fromBody = typeof body === 'object' && body !== null ? body.captcha_token : undefined;
  const header = request.headers['x-captcha-token'];
  const token = typeof fromBody === 'string' ? fromBody : typeof header === 'string' ? header : undefined;
  const trimmed = token?.trim();
  return trimmed === undefined || trimmed === '' || trimmed.length > maxCaptchaTokenLength ? undefined : trimmed;
}

/**
 * The bot check of a store's operation, run by a route before any lookup or counting. A token
 * missing or refused is `422 validation_failed` on `captcha_token`, whoever the request names.
 * A provider that cannot answer fails closed, `503 service_unavailable` with Retry-After: a check
 * that let requests through whenever its provider is down (or made slow by the attacker's own
 * flood) would stop no bot, and a 503, unlike a 422, tells the shopper that their token was not
 * the trouble and a retry may pass.
 */
export function botCheckGate(services: Pick<Edge, 'keys'>) {
  return async (request: FastifyRequest, operation: BotCheckOperation): Promise<void> => {
    const check = request.store.botCheck;
    if (check === null || !check.on.includes(operation)) return;
    const token = tokenOf(request);
    const verdict = token === undefined ? 'failed' : await verify(check, token, request, services.keys);
    if (verdict === 'passed') return;
    if (verdict === 'unavailable')
      throw new ProblemError('service_unavailable', {}, { 'retry-after': siteverifyRetryAfterSeconds });
    const errors: FieldErrors = {};
    addFieldError(errors, 'captcha_token', 'captcha');
    throw new ProblemError('validation_failed', { errors });
  };
}

async function verify(
  check: BotCheck,
  token: string,
  request: FastifyRequest,
  keys: Edge['keys'],
): Promise<SiteverifyVerdict> {
  const secret = unseal(acceptedKeys(keys, 'hooks'), check.sealedSecret)?.text;
  if (secret === undefined) {
    request.log.error('bot check: the store’s secret was sealed under an APP_SECRET no longer accepted; set it again');
    return 'unavailable';
  }
  return siteverify(check.verifyUrl ?? siteverifyUrls[check.provider], secret, token, request.ip, request.log);
}
