import { baseLanguage, catalogue, type Phrase } from '../../i18n/strings.js';

/**
 * Every error code the customer API can answer with, and its status. Its title and detail are the
 * `problem.<code>` strings of locales/, in the language the answer is written in. Tests assert
 * codes, never prose. One text for every cause of `invalid_identity_challenge` (wrong, expired,
 * used, replaced, dead after five tries, no such account): which one it was is never told.
 */
export const problemCatalogue = {
  validation_failed: { status: 422 },
  identity_unavailable: { status: 422 },
  invalid_identity_challenge: { status: 422 },
  unauthenticated: { status: 401 },
  identity_unverified: { status: 403 },
  account_blocked: { status: 403 },
  untrusted_origin: { status: 403 },
  not_found: { status: 404 },
  last_sign_in_method: { status: 409 },
  two_factor_on: { status: 409 },
  two_factor_off: { status: 409 },
  two_factor_enforced: { status: 409 },
  method_not_allowed: { status: 405 },
  payload_too_large: { status: 413 },
  unsupported_media_type: { status: 415 },
  misdirected_request: { status: 421 },
  csrf_token_mismatch: { status: 419 },
  rate_limited: { status: 429 },
  internal_error: { status: 500 },
  store_not_found: { status: 404 },
  store_unavailable: { status: 503 },
  deployment_not_ready: { status: 503 },
  service_unavailable: { status: 503 },
} as const;

export type ProblemCode = keyof typeof problemCatalogue;

/**
 * The codes only the admin listener answers (docs/reference/admin-listener.md). Kept apart:
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
  cookie_domain_shared: {
    status: 409,
    title: 'Cookie domain shared',
    detail:
      "A cookie domain would cover a host of another store, whose shoppers' browsers would then receive this store's cookies.",
  },
  relying_party_in_use: {
    status: 409,
    title: 'Relying party in use',
    detail:
      "The host is the last on the relying party ID of the store's passkeys, which would stop signing in; set another webauthn_rp_id first, or send ?force=true.",
  },
  identity_mode_in_use: {
    status: 409,
    title: 'Identity mode in use',
    detail:
      'The store has customers registered by its current identity mode, who could no longer sign in; send ?force=true to switch anyway.',
  },
  import_running: {
    status: 409,
    title: 'Import running',
    detail: "An import of this store's customers is running; wait for its report to say done or failed.",
  },
  has_password: {
    status: 409,
    title: 'Has a password',
    detail: 'The customer has a password, so needs no invitation; they can reset it with forgot/reset if it is lost.',
  },
  phone_store: {
    status: 409,
    title: 'Phone store',
    detail:
      "This store's customers sign in with a phone number; sign-in providers match customers by a verified email, so only email stores have them.",
  },
  webhook_limit: {
    status: 409,
    title: 'Webhook limit',
    detail: 'The store has as many webhook endpoints as it may (20); remove one first.',
  },
  delivery_erased: {
    status: 409,
    title: 'Delivery erased',
    detail: "The event's customer was deleted and its body erased with them: it can no longer be sent.",
  },
  message_not_retryable: {
    status: 409,
    title: 'Message not retryable',
    detail:
      'Only a failed message can be sent again: a pending one is still being tried, a sent one went out, and a dropped one has no body left.',
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

function isCustomerCode(code: AnyProblemCode): code is ProblemCode {
  return Object.hasOwn(problemCatalogue, code);
}

/**
 * A code's status, title and detail, whichever listener answers it: the customer API's in
 * `language`, the admin listener's (for operators) in English.
 */
export function problemEntry(
  code: AnyProblemCode,
  language: string = baseLanguage,
): { status: number; title: string; detail: string } {
  if (!isCustomerCode(code)) return adminProblemCatalogue[code];
  return {
    status: problemCatalogue[code].status,
    title: catalogue.text(language, `problem.${code}.title`),
    detail: catalogue.text(language, `problem.${code}.detail`),
  };
}

/**
 * Reason phrases for the status lines of statuses Node's http module does not name, which it would
 * send as `419 unknown`. 419 is Laravel's, whose CSRF flow this API follows.
 */
export const reasonPhrases: Readonly<Partial<Record<number, string>>> = { 419: 'Page Expired' };

/** A field's message: a phrase written in the answer's language, or (the operators' own fields) English text. */
export type FieldMessage = string | Phrase;

export interface ProblemExtras {
  errors?: Record<string, FieldMessage[]>;
  checks?: Record<string, boolean>;
  details?: Record<string, string>;
  /** When a block ends (`account_blocked`), where one was set. */
  until?: string;
}

/** Thrown anywhere at the edge; the error handler turns it into a problem document. */
export class ProblemError extends Error {
  constructor(
    readonly code: AnyProblemCode,
    readonly extras: ProblemExtras = {},
    readonly headers: Record<string, string | number> = {},
    /** Where one text must cover several causes; else the code's own detail. */
    readonly detail?: FieldMessage,
  ) {
    super(detail === undefined ? problemEntry(code).detail : written(baseLanguage, detail));
    this.name = 'ProblemError';
  }
}

function written(language: string, message: FieldMessage): string {
  return typeof message === 'string' ? message : catalogue.say(language, message);
}

/** A problem document in `language`: its code and status never change, its words do. */
export function problemDocument(
  code: AnyProblemCode,
  requestId: string,
  language: string,
  detail?: FieldMessage,
  { errors, ...extras }: ProblemExtras = {},
) {
  const entry = problemEntry(code, language);
  return {
    type: 'about:blank',
    title: entry.title,
    status: entry.status,
    code,
    detail: detail === undefined ? entry.detail : written(language, detail),
    request_id: requestId,
    ...(errors !== undefined && {
      errors: Object.fromEntries(
        Object.entries(errors).map(([field, messages]) => [
          field,
          messages.map((message) => written(language, message)),
        ]),
      ),
    }),
    ...extras,
  };
}
