/** Every error code the API can answer with: its status and title. Tests assert codes, never prose. */
export const problemCatalogue = {
  validation_failed: {
    status: 422,
    title: 'Validation failed',
    detail: 'The request has fields that are missing or invalid.',
  },
  identity_unavailable: {
    status: 422,
    title: 'Identity unavailable',
    detail: 'This identity cannot be used to register.',
  },
  invalid_identity_challenge: {
    status: 422,
    title: 'Invalid identity challenge',
    // One text for every cause (wrong, expired, used, replaced, dead after five tries, no such
    // account): which one it was is never told, and a new code is the way on from each.
    detail: 'The code is wrong, has expired or was already used. Check it, or ask for a new code.',
  },
  unauthenticated: { status: 401, title: 'Unauthenticated', detail: 'Sign in to continue.' },
  identity_unverified: {
    status: 403,
    title: 'Identity unverified',
    detail:
      'Prove this account’s email address or phone number first: verify it, reset the password or sign in with a code.',
  },
  untrusted_origin: { status: 403, title: 'Untrusted origin', detail: 'Requests from this origin are not accepted.' },
  not_found: { status: 404, title: 'Not found', detail: 'There is nothing at this path.' },
  last_sign_in_method: {
    status: 409,
    title: 'Last sign-in method',
    detail:
      'This is the last way to sign in to the account (no password, passkey or other provider); set a password first with forgot/reset.',
  },
  method_not_allowed: { status: 405, title: 'Method not allowed', detail: 'This path does not accept this method.' },
  payload_too_large: { status: 413, title: 'Payload too large', detail: 'The request body is larger than 16 KiB.' },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    detail: 'Send the body as application/json.',
  },
  misdirected_request: {
    status: 421,
    title: 'Misdirected request',
    detail:
      'This host is not under the domain the service sets its cookies for (COOKIE_DOMAIN): a browser would drop them. Call the service on a host of that domain.',
  },
  csrf_token_mismatch: {
    status: 419,
    title: 'CSRF token mismatch',
    detail:
      'Get a token from GET /api/v1/csrf-cookie (the XSRF-TOKEN cookie, or its X-XSRF-TOKEN response header) and send it in the X-XSRF-TOKEN header of this request.',
  },
  rate_limited: { status: 429, title: 'Too many requests', detail: 'Too many requests; try again later.' },
  internal_error: { status: 500, title: 'Internal error', detail: 'Something went wrong on our side.' },
  store_not_found: {
    status: 404,
    title: 'Store not found',
    detail: 'No store of this deployment answers on this host.',
  },
  store_unavailable: { status: 503, title: 'Store unavailable', detail: 'The store is not open right now.' },
  deployment_not_ready: {
    status: 503,
    title: 'Deployment not ready',
    detail: 'A dependency of the service is unavailable.',
  },
  service_unavailable: {
    status: 503,
    title: 'Service unavailable',
    detail: 'The service cannot answer right now; try again shortly.',
  },
} as const;

export type ProblemCode = keyof typeof problemCatalogue;

/**
 * The codes only the admin listener answers (docs/reference.md, The admin listener). Kept apart:
 * the catalogue above is the customer API's contract, which its typed client copies.
 */
export const adminProblemCatalogue = {
  forbidden: { status: 403, title: 'Forbidden', detail: 'This token may not make this call.' },
  slug_taken: { status: 409, title: 'Slug taken', detail: 'Another store has this slug.' },
  host_taken: {
    status: 409,
    title: 'Host taken',
    detail: 'Another store answers on this host; remove it there first.',
  },
  identity_mode_in_use: {
    status: 409,
    title: 'Identity mode in use',
    detail:
      'The store has customers registered by its current identity mode, who could no longer sign in; send ?force=true to switch anyway.',
  },
  phone_store: {
    status: 409,
    title: 'Phone store',
    detail:
      "This store's customers sign in with a phone number; sign-in providers match customers by a verified email, so only email stores have them.",
  },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency key reused',
    detail: 'This Idempotency-Key came with another request within the last 24 hours; use a new key for a new request.',
  },
} as const;

export type AdminProblemCode = keyof typeof adminProblemCatalogue;

/** A code either listener answers with. */
export type AnyProblemCode = ProblemCode | AdminProblemCode;

const everyProblem: Record<AnyProblemCode, { status: number; title: string; detail: string }> = {
  ...problemCatalogue,
  ...adminProblemCatalogue,
};

/** A code's status, title and detail, whichever listener answers it. */
export function problemEntry(code: AnyProblemCode): { status: number; title: string; detail: string } {
  return everyProblem[code];
}

/**
 * Reason phrases for the status lines of statuses Node's http module does not name, which it would
 * send as `419 unknown`. 419 is Laravel's, whose CSRF flow this API follows.
 */
export const reasonPhrases: Readonly<Partial<Record<number, string>>> = { 419: 'Page Expired' };

export interface ProblemExtras {
  errors?: Record<string, string[]>;
  checks?: Record<string, boolean>;
  details?: Record<string, string>;
}

/** Thrown anywhere at the edge; the error handler turns it into a problem document. */
export class ProblemError extends Error {
  constructor(
    readonly code: AnyProblemCode,
    readonly extras: ProblemExtras = {},
    readonly headers: Record<string, string | number> = {},
    detail?: string,
  ) {
    super(detail ?? everyProblem[code].detail);
    this.name = 'ProblemError';
  }
}

export function problemDocument(code: AnyProblemCode, requestId: string, detail?: string, extras: ProblemExtras = {}) {
  const entry = everyProblem[code];
  return {
    type: 'about:blank',
    title: entry.title,
    status: entry.status,
    code,
    detail: detail ?? entry.detail,
    request_id: requestId,
    ...extras,
  };
}
