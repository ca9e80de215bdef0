// The shapes loadConfig returns, and the defaults other modules start from.

/** The delivery settings' defaults, which the dispatcher also starts from when built directly. */
export const deliveryDefaults: {
  retryBaseSeconds: number;
  windowSeconds: number;
  budgetPerHour: number;
  /** SMS each store may send to one country calling code in any hour; 0: no such budget. */
  smsBudgetPerCountryPerHour: number;
} = {
  retryBaseSeconds: 5,
  windowSeconds: 60 * 60,
  budgetPerHour: 1000,
  smsBudgetPerCountryPerHour: 0,
};

export type IdentityMode = 'email' | 'phone';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * The embedded server in DATA_DIR, or a PostgreSQL server at DATABASE_URL. APP_SECRET goes with
 * the mode: a server deployment must name it (instances share it), while the embedded mode may
 * leave it to the secret it generates into DATA_DIR on first start. Both modes have a pool
 * (the embedded server's connection slots are sized from it); only a server has a CA to check.
 */
export type DatabaseConfig =
  | {
      mode: 'embedded';
      dataDir: string;
      appSecret: string | undefined;
      /** Database connections this instance opens at most (the pg pool's size). */
      poolSize: number;
    }
  | {
      mode: 'server';
      url: string;
      appSecret: string;
      /** Database connections this instance opens at most (the pg pool's size). */
      poolSize: number;
      /** PEM CA bundle (DATABASE_CA_FILE, read at start) that verifies the server's certificate. */
      ca: string | undefined;
    };

/**
 * Where the rate-limit counters live: this instance's memory, or a Redis (REDIS_URL) that every
 * instance shares, with this instance's memory standing in while it is unreachable.
 */
export type CountersConfig =
  | { kind: 'memory' }
  | {
      kind: 'redis';
      /** `redis://` or `rediss://` for one server, `redis+cluster://` or `rediss+cluster://` for a Redis Cluster. */
      url: string;
      /** A Redis Cluster: the key prefix then holds no "{", which would pick every key's hash slot. */
      cluster: boolean;
      /** A `rediss` URL: TLS, the certificate verified against `ca` (REDIS_CA_FILE) or the system's CAs. */
      tls: { ca: string | undefined } | undefined;
      /** Prepended to every Redis key, so deployments sharing one Redis never count each other's calls. */
      keyPrefix: string;
    };

/**
 * How email leaves: through an SMTP server (SMTP_URL), or nowhere, where the log stands in when
 * `deliveryLogAllowed` and email is refused otherwise.
 */
export type MailConfig =
  | { kind: 'none' }
  | {
      kind: 'smtp';
      /** `smtps://` (implicit TLS) or `smtp://` (STARTTLS), without query parameters. */
      url: string;
      /** MAIL_FROM. */
      from: string;
      /** PEM CA bundle (SMTP_CA_FILE) for the SMTP server's certificate, implicit TLS or STARTTLS. */
      ca: string | undefined;
    };

export interface Config {
  port: number;
  host: string;
  /** Which PostgreSQL the service uses, and the secret that goes with it. */
  database: DatabaseConfig;
  counters: CountersConfig;
  searchUrl: string | undefined;
  /**
   * Secrets accepted when checking a code MAC, a CSRF token or a sealed body, but never used to
   * make one: APP_SECRET's predecessors during a rotation (or its successor just before one).
   */
  appSecretPrevious: string[];
  /** argon2 hashing threads, and hashes run at once. */
  hashThreads: number;
  platformName: string;
  initialStore: { name: string; identityMode: IdentityMode; verificationRequired: boolean };
  mail: MailConfig;
  /** The SMS hook and the secret that signs its requests: both or neither. */
  smsWebhook: { url: string; secret: string } | undefined;
  /** Calling codes (without '+') a phone store accepts at registration; empty means all. */
  smsAllowedCallingCodes: string[];
  /**
   * BREACHED_PASSWORDS_URL: a Pwned-Passwords-compatible range API new passwords are checked
   * against; undefined: the local copy (`breached load`) when it has rows, else no check.
   */
  breachedPasswordsUrl: string | undefined;
  delivery: typeof deliveryDefaults;
  /**
   * Where webhooks may go: `https://` only in production; private, loopback and link-local
   * addresses only with WEBHOOK_ALLOW_PRIVATE=true.
   */
  webhooks: { httpsOnly: boolean; allowPrivate: boolean };
  retention: RetentionSettings;
  /** Seconds between the janitor's passes; 0: no janitor in this instance. */
  janitorIntervalSeconds: number;
  /**
   * Whether a channel without its transport may fall back to the log, codes included: always
   * outside production, in production only when DELIVERY_LOG_IN_PRODUCTION=true.
   */
  deliveryLogAllowed: boolean;
  /** NODE_ENV is not production: the log transport also prints each message's subject as a plain line. */
  development: boolean;
  cookieSecure: boolean;
  /**
   * COOKIE_DOMAIN: the parent domain the session and XSRF-TOKEN cookies are set for, so a
   * frontend on a sibling host can read the token; undefined: host-only cookies.
   */
  cookieDomain: string | undefined;
  sessionCookieName: string;
  corsAllowedOrigins: string[];
  webauthn: WebAuthnSettings;
  /** Where Prometheus metrics are served; undefined: not served. */
  metrics: { port: number; host: string } | undefined;
  /**
   * METRICS_STORE_LABELS: how many stores get a `store` label value of their own (their slug) in
   * this process, the first ones seen; every further store shares `_other`. 0: all share it.
   */
  metricsStoreLabels: number;
  /** The admin listener; undefined (not started) without ADMIN_TOKENS or INTROSPECTION_TOKENS. */
  admin: AdminListenerConfig | undefined;
  /** Serve the sign-in page at `/`. */
  signInPage: boolean;
  trustProxy: boolean;
  logLevel: LogLevel;
  /**
   * SIGTERM: readiness answers 503 at once while requests are still served for `delaySeconds`,
   * so load balancers stop sending before the listener closes; all of it ends by `timeoutSeconds`.
   */
  shutdown: { delaySeconds: number; timeoutSeconds: number };
  /** Variables set that are no setting but look like a mistyped one: warned of at start, else ignored. */
  nearMisses: NearMiss[];
}

/**
 * The admin listener (ADMIN_PORT, ADMIN_HOST): a port of its own, never the customer's, and the
 * bearer tokens that may call it, several per variable so one can be rotated out.
 */
export interface AdminListenerConfig {
  port: number;
  host: string;
  /** ADMIN_TOKENS: may call every admin route. */
  adminTokens: string[];
  /** INTROSPECTION_TOKENS: may call only the session introspection (and read the admin API document). */
  introspectionTokens: string[];
}

/** A variable that is no setting, and the setting it is one or two letters away from. */
export interface NearMiss {
  variable: string;
  resembles: string;
}

/** The relying party passkeys are made for, and the pages allowed to use them. */
export interface WebAuthnSettings {
  /** WEBAUTHN_RP_ID: the domain passkeys are bound to (the RP ID). */
  rpId: string;
  /** Origins whose ceremonies are accepted: WEBAUTHN_ORIGINS, or the allowed CORS origins on the RP ID. */
  origins: string[];
  /**
   * WEBAUTHN_ORIGINS unset: the origin a request was addressed to is accepted too, when its host is
   * on the RP ID (see relyingParty in http/passkeys/support.ts).
   */
  includeOwnOrigin: boolean;
}

/** How long dead rows are kept before the janitor deletes them, in days (fractions allowed). */
export interface RetentionSettings {
  /** Sessions, counted from their end (absolute lifetime or idle timeout). */
  sessionDays: number;
  /** Codes, counted from their end (expiry, use or replacement). */
  codeDays: number;
  /** Sent and dropped messages. */
  messageDays: number;
  /** Failed messages, kept longer so an operator can look at them and retry. */
  failedMessageDays: number;
  auditDays: number;
}

export const defaultRetention: RetentionSettings = {
  sessionDays: 1,
  codeDays: 1,
  messageDays: 7,
  failedMessageDays: 30,
  auditDays: 400,
};
