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
    detail: 'The code is wrong, expired or already used.',
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
  method_not_allowed: { status: 405, title: 'Method not allowed', detail: 'This path does not accept this method.' },
  payload_too_large: { status: 413, title: 'Payload too large', detail: 'The request body is larger than 16 KiB.' },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    detail: 'Send the body as application/json.',
  },
  csrf_token_mismatch: {
    status: 419,
    title: 'CSRF token mismatch',
    detail: 'Fetch a fresh XSRF-TOKEN cookie and send it back in the X-XSRF-TOKEN header.',
  },
  rate_limited: { status: 429, title: 'Too many requests', detail: 'Too many requests; try again later.' },
  internal_error: { status: 500, title: 'Internal error', detail: 'Something went wrong on our side.' },
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

export interface ProblemExtras {
  errors?: Record<string, string[]>;
  checks?: Record<string, boolean>;
  details?: Record<string, string>;
}

/** Thrown anywhere at the edge; the error handler turns it into a problem document. */
export class ProblemError extends Error {
  constructor(
    readonly code: ProblemCode,
    readonly extras: ProblemExtras = {},
    readonly headers: Record<string, string | number> = {},
    detail?: string,
  ) {
    super(detail ?? problemCatalogue[code].detail);
    this.name = 'ProblemError';
  }
}

export function problemDocument(code: ProblemCode, requestId: string, detail?: string, extras: ProblemExtras = {}) {
  const entry = problemCatalogue[code];
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
