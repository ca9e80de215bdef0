// Written by scripts/client-types.ts from the route schemas (src/http/core/schemas.ts,
// src/http/passkeys/schemas.ts) and the problem codes (src/http/core/problems.ts): do not edit it by
// hand; run `npm run client:types` after changing them.

/** Every error code the API can answer with (the `code` of its problem documents). */
export type ProblemCode =
  | 'validation_failed'
  | 'identity_unavailable'
  | 'invalid_identity_challenge'
  | 'unauthenticated'
  | 'identity_unverified'
  | 'account_blocked'
  | 'untrusted_origin'
  | 'not_found'
  | 'last_sign_in_method'
  | 'two_factor_on'
  | 'two_factor_off'
  | 'two_factor_enforced'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'misdirected_request'
  | 'csrf_token_mismatch'
  | 'rate_limited'
  | 'internal_error'
  | 'store_not_found'
  | 'store_unavailable'
  | 'deployment_not_ready'
  | 'service_unavailable';

/** The codes only the admin listener answers with, besides those of ProblemCode. */
export type AdminProblemCode =
  | 'forbidden'
  | 'slug_taken'
  | 'host_taken'
  | 'cookie_domain_shared'
  | 'relying_party_in_use'
  | 'identity_mode_in_use'
  | 'import_running'
  | 'has_password'
  | 'phone_store'
  | 'webhook_limit'
  | 'delivery_erased'
  | 'message_not_retryable'
  | 'idempotency_key_reused';

export interface RegisterBody {
  /** Up to 120 characters once trimmed; no control characters. */
  name: string;
  /** Required on a store whose identity mode is email; refused on a phone store. */
  email?: string;
  /** E.164; required on a store whose identity mode is phone; refused on an email store. */
  phone?: string;
  /** At least 8 characters with a letter and a number; not a common password. */
  password: string;
  /** Must equal password. */
  password_confirmation: string;
  /** The language of the customer's messages: one of the store's languages (`en`, `ar`, …). Left out at registration: the store language `Accept-Language` asks for, if any. */
  locale?: string;
  /** The token of the store's bot check widget, when the store's `auth.bot_check` lists the operation (or send `X-Captcha-Token`). */
  captcha_token?: string;
}

export interface VerifyBody {
  /** The account's email address or phone number (E.164), by the store's identity mode. */
  identity: string;
  /** The six-digit code that was sent; Arabic-Indic (U+0660–U+0669) and Extended Arabic-Indic (U+06F0–U+06F9) digits are read as ASCII digits. */
  code: string;
}

export interface IdentityBody {
  /** The account's email address or phone number (E.164), by the store's identity mode. */
  identity: string;
  /** The token of the store's bot check widget, when the store's `auth.bot_check` lists the operation (or send `X-Captcha-Token`). */
  captcha_token?: string;
}

export interface LoginBody {
  /** The account's email address or phone number (E.164), by the store's identity mode. */
  identity: string;
  password: string;
}

export interface ResetPasswordBody {
  /** The account's email address or phone number (E.164), by the store's identity mode. */
  identity: string;
  /** The six-digit code that was sent; Arabic-Indic (U+0660–U+0669) and Extended Arabic-Indic (U+06F0–U+06F9) digits are read as ASCII digits. */
  code: string;
  /** The new password, by the same rules as at registration. */
  password: string;
  password_confirmation: string;
}

export interface ChangePasswordBody {
  /** The password the account has now. */
  current_password: string;
  /** The new password, by the same rules as at registration. */
  password: string;
  password_confirmation: string;
}

export interface ProfileBody {
  /** Up to 120 characters once trimmed; no control characters. Required unless `locale` is sent. */
  name?: string;
  /** The language of the customer's messages: one of the store's languages, or null for the store's default. */
  locale?: string | null;
}

export interface IdentityChangeBody {
  /** The new email address; required on an email store and refused on a phone store. */
  email?: string;
  /** The new phone number (E.164); required on a phone store and refused on an email store. */
  phone?: string;
  /** The password the account has now. */
  current_password: string;
  /** The token of the store's bot check widget, when the store's `auth.bot_check` lists the operation (or send `X-Captcha-Token`). */
  captcha_token?: string;
}

export interface IdentityConfirmBody {
  /** The six-digit code that was sent; Arabic-Indic (U+0660–U+0669) and Extended Arabic-Indic (U+06F0–U+06F9) digits are read as ASCII digits. */
  code: string;
}

export interface DeleteAccountBody {
  /** Checked like a login; counts toward the failed-login limit. */
  current_password: string;
}

export interface Customer {
  id: string;
  name: string;
  identity: {
    type: 'email' | 'phone';
    /** Lowercased; an email address with an internationalized domain shows the domain in Unicode. */
    value: string;
    /** An ISO 8601 date and time (UTC). */
    verified_at: string | null;
  };
  /** Whether the account has a password: not when a sign-in provider made it, or a first sign-in with a code or a provider retired the unproven one. Without one, password change, identity change and deletion refuse every current_password until POST /password/forgot and POST /password/reset set one. */
  has_password: boolean;
}

export interface AuthSession {
  auth_type: 'session';
  customer: Customer;
}

/** The first step was right and the customer has a second step: no session yet. An HttpOnly cookie holds the pending sign-in for 5 minutes; finish it with `POST /two-factor/verify`. */
export interface TwoFactorRequired {
  auth_type: 'two_factor_required';
  methods: Array<'totp' | 'recovery_code'>;
}

export type SignInAnswer = AuthSession | TwoFactorRequired;

export interface AcceptedStatus {
  status: 'accepted';
}

export interface PasswordResetStatus {
  status: 'password_reset';
}

export interface PasswordChangedStatus {
  status: 'password_changed';
}

export interface SignedOutStatus {
  status: 'signed_out';
}

export interface Session {
  /** A public handle for the session; never the cookie value or its hash. */
  id: string;
  /** Whether this is the session of the request. */
  current: boolean;
  /** An ISO 8601 date and time (UTC). */
  created_at: string;
  /** May lag by up to 5 minutes. */
  last_seen_at: string;
  /** An ISO 8601 date and time (UTC). */
  expires_at: string;
  client: {
    /** What the browser sent at login, cut to 256 characters; null when it sent none. */
    user_agent: string | null;
    /** The device in a few words, e.g. `Firefox on Windows`: browser and system, no versions. */
    device: string;
    /** The login address masked to its /24 (IPv4) or /48 (IPv6), e.g. `203.0.113.0/24`. */
    address: string | null;
  };
}

export interface SessionList {
  /** Newest first. */
  sessions: Session[];
}

export interface RevokedStatus {
  status: 'revoked';
}

export interface RevokedCountStatus {
  status: 'revoked';
  count: number;
}

export interface DeletedStatus {
  status: 'deleted';
}

/** Everything kept about the signed-in customer, and nothing about anyone else. */
export interface AccountExport {
  /** An ISO 8601 date and time (UTC). */
  exported_at: string;
  customer: {
    id: string;
    name: string;
    identity: {
      type: 'email' | 'phone';
      /** Lowercased; an email address with an internationalized domain shows the domain in Unicode. */
      value: string;
      /** An ISO 8601 date and time (UTC). */
      verified_at: string | null;
    };
    /** Whether the account has a password: not when a sign-in provider made it, or a first sign-in with a code or a provider retired the unproven one. Without one, password change, identity change and deletion refuse every current_password until POST /password/forgot and POST /password/reset set one. */
    has_password: boolean;
    /** The language of the customer's messages, recorded at registration or set with POST /profile; null: the store's default language. */
    locale: string | null;
    /** An ISO 8601 date and time (UTC). */
    created_at: string;
    /** A second step is on (its secret and recovery codes are never exported). */
    two_factor: boolean;
  };
  /** The live sessions, newest first, as `GET /sessions` lists them. */
  sessions: Session[];
  /** The devices remembered for new-sign-in notices (90 days), most recent first. */
  known_devices: {
    family: string;
    masked_address: string;
    /** An ISO 8601 date and time (UTC). */
    last_seen_at: string;
  }[];
  /** The passkeys that can sign in to the account, newest first (never their keys). */
  passkeys: {
    id: string;
    name: string;
    /** An ISO 8601 date and time (UTC). */
    created_at: string;
    /** An ISO 8601 date and time (UTC). */
    last_used_at: string | null;
  }[];
  /** The sign-in providers linked to the account, oldest first. */
  provider_links: {
    provider: string;
    email: string | null;
    /** An ISO 8601 date and time (UTC). */
    linked_at: string;
  }[];
  /** Newest first. */
  audit_events: {
    /** An ISO 8601 date and time (UTC). */
    occurred_at: string;
    event: string;
    client_address: string | null;
    details: Record<string, string>;
  }[];
}

export interface PlatformInfo {
  name: string;
  api_version: string;
}

export interface HealthStatus {
  status: 'ok';
}

export interface ReadinessChecks {
  database: boolean;
  cache: boolean;
  search: boolean;
  store: boolean;
}

export interface HealthReady {
  status: string;
  checks: ReadinessChecks;
  details?: {
    store_id: string;
    store_status: string;
  };
}

/** PublicKeyCredentialCreationOptionsJSON: hand it to the browser's WebAuthn call as is. */
export interface PasskeyCreationOptions {
  /** base64url */
  challenge: string;
  rp: {
    name: string;
    id?: string;
  };
  user: {
    /** base64url, at most 64 bytes */
    id: string;
    name: string;
    displayName: string;
  };
  pubKeyCredParams: {
    type: string;
    alg: number;
  }[];
  timeout?: number;
  excludeCredentials?: {
    /** base64url, at most 1,023 bytes */
    id: string;
    type: string;
    transports?: string[];
  }[];
  authenticatorSelection?: {
    residentKey?: string;
    requireResidentKey?: boolean;
    userVerification?: string;
  };
  attestation?: string;
  extensions?: {};
  hints?: string[];
}

/** PublicKeyCredentialRequestOptionsJSON: hand it to the browser's WebAuthn call as is. */
export interface PasskeyRequestOptions {
  /** base64url */
  challenge: string;
  rpId?: string;
  timeout?: number;
  /** Always empty: discoverable credentials. */
  allowCredentials?: {
    /** base64url, at most 1,023 bytes */
    id: string;
    type: string;
    transports?: string[];
  }[];
  userVerification?: string;
  extensions?: {};
  hints?: string[];
}

export interface PasskeyRegisterBody {
  /** RegistrationResponseJSON, as the browser made it. */
  credential: {
    /** base64url, at most 1,023 bytes */
    id: string;
    /** base64url, at most 1,023 bytes */
    rawId: string;
    type: 'public-key';
    clientExtensionResults?: {};
    authenticatorAttachment?: string;
    response: {
      /** base64url */
      clientDataJSON: string;
      /** base64url */
      attestationObject: string;
      transports?: string[];
    };
  };
  /** What to call the passkey: up to 120 characters once trimmed. Default: the device, e.g. "Chrome on macOS". */
  name?: string;
  /** The password the account has now; required when it has one, so a stolen session alone cannot add a lasting way in. */
  current_password?: string;
}

export interface PasskeyLoginBody {
  /** AuthenticationResponseJSON, as the browser made it. */
  credential: {
    /** base64url, at most 1,023 bytes */
    id: string;
    /** base64url, at most 1,023 bytes */
    rawId: string;
    type: 'public-key';
    clientExtensionResults?: {};
    authenticatorAttachment?: string;
    response: {
      /** base64url */
      clientDataJSON: string;
      /** base64url */
      authenticatorData: string;
      /** base64url */
      signature: string;
      /** base64url, at most 64 bytes */
      userHandle?: string;
    };
  };
}

export interface Passkey {
  /** A public handle for the passkey; never its credential id. */
  id: string;
  name: string;
  /** An ISO 8601 date and time (UTC). */
  created_at: string;
  /** The last sign-in with it; null before the first. */
  last_used_at: string | null;
}

export interface PasskeyList {
  /** Newest first. */
  passkeys: Passkey[];
}

export interface ProviderList {
  providers: {
    /** For the start and callback paths */
    id: string;
    /** For the "Continue with …" button */
    name: string;
  }[];
}

export interface LinkedProviders {
  links: {
    provider: string;
    /** The provider's display name; null when the store no longer offers it */
    name: string | null;
    /** The email the provider gave, lowercased */
    email: string | null;
    /** An ISO 8601 date and time (UTC). */
    linked_at: string;
  }[];
}

export interface UnlinkedStatus {
  status: 'unlinked';
}

/** Exactly one of `code` and `recovery_code`. */
export interface SecondStepBody {
  /** The six digits the authenticator app shows now. */
  code?: string;
  /** One of the recovery codes (`xxxxx-xxxxx`; case, spaces and hyphens do not matter); single use. */
  recovery_code?: string;
}

export interface TwoFactorStatus {
  status: 'off' | 'pending' | 'on';
  recovery_codes_left: number;
  store: 'optional' | 'required';
}

export interface TwoFactorSetupBody {
  /** Required when the account has a password: checked as a login is and counted by the failed-login limit. */
  current_password?: string;
}

export interface TwoFactorSetup {
  /** Base32, for typing into an app. */
  secret: string;
  /** The store's name as the issuer, the identity as the account. */
  otpauth_uri: string;
  /** The URI as a QR code, an SVG document with no script or style. */
  qr_svg: string;
}

export interface TwoFactorConfirmBody {
  /** The six digits the authenticator app shows now. */
  code: string;
}

export interface TwoFactorChangeBody {
  /** Required when the account has a password: checked as a login is and counted by the failed-login limit. */
  current_password?: string;
  /** The six digits the authenticator app shows now, or one of the recovery codes (spent). */
  code: string;
}

export interface TwoFactorOffStatus {
  status: 'off';
}

export interface RecoveryCodes {
  /** Ten single-use codes (`xxxxx-xxxxx`), shown only in this answer: the customer keeps them. */
  recovery_codes: string[];
}
