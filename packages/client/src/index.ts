/**
 * A typed client for the Storefront Auth API, for Node (20+) and browsers. No dependencies, `fetch`
 * only: the types (api-types.ts, written from the service's route schemas) vanish at build time.
 *
 * - In a browser the browser keeps the cookies. In Node the client keeps its own cookie jar (one
 *   per client, for the one service at `baseUrl`): it stores what `Set-Cookie` gives and sends it
 *   back in `Cookie`. A server acting for a shopper seeds that jar with the shopper's `Cookie`
 *   header (`cookie`) and hands what the service sets back to the shopper (`onSetCookie`).
 * - Every POST follows the CSRF flow (docs/reference/sessions-and-cookies.md, CSRF): the client fetches an `XSRF-TOKEN` cookie when
 *   it has none, echoes it in `X-XSRF-TOKEN`, and on a `419 csrf_token_mismatch` fetches a fresh one
 *   and retries once.
 * - A success resolves with the typed body; any failure throws a `StorefrontAuthError`.
 */
import type {
  AcceptedStatus,
  AccountExport,
  AuthSession,
  ChangePasswordBody,
  RecoveryCodes,
  SecondStepBody,
  SignInAnswer,
  TwoFactorChangeBody,
  TwoFactorConfirmBody,
  TwoFactorOffStatus,
  TwoFactorSetup,
  TwoFactorSetupBody,
  TwoFactorStatus,
  Customer,
  DeleteAccountBody,
  DeletedStatus,
  HealthReady,
  HealthStatus,
  IdentityBody,
  IdentityChangeBody,
  IdentityConfirmBody,
  LoginBody,
  Passkey,
  PasskeyCreationOptions,
  PasskeyList,
  PasskeyLoginBody,
  PasskeyRegisterBody,
  PasskeyRequestOptions,
  LinkedProviders,
  PasswordChangedStatus,
  PasswordResetStatus,
  PlatformInfo,
  ProfileBody,
  ProviderList,
  RegisterBody,
  ResetPasswordBody,
  RevokedCountStatus,
  RevokedStatus,
  SessionList,
  SignedOutStatus,
  UnlinkedStatus,
  VerifyBody,
} from './api-types.js';
import { answerOf, fetchAnswer, StorefrontAuthError } from './answers.js';

export * from './api-types.js';
export { StorefrontAuthError, type StorefrontAuthErrorCode, type StorefrontAuthErrorInit } from './answers.js';

type Fetch = typeof globalThis.fetch;

export interface StorefrontAuthClientOptions {
  /** Where the service answers, e.g. `https://auth.shop.example`, or with a path prefix behind a proxy. */
  baseUrl: string | URL;
  /** Defaults to the global `fetch`. */
  fetch?: Fetch;
  /**
   * Headers sent with every request. A server-side storefront that acts for a browser can pass the
   * page's `Origin` here; the CSRF flow then works exactly as it does in the browser (and, with the
   * service's COOKIE_DOMAIN, `baseUrl` must then name a host under that domain, or the answer is 421).
   */
  headers?: Record<string, string>;
  /** Keep cookies in the client (`true`, the default outside a browser or with `cookie`) or leave them to the browser. */
  cookieJar?: boolean;
  /**
   * Server side, acting for one shopper: the `Cookie` header their browser sent you (undefined when
   * it sent none). The client's jar starts with those cookies, so the service sees the shopper's
   * session and XSRF-TOKEN. Make one client per shopper request: a jar is one shopper's.
   */
  cookie?: string;
  /**
   * Called with the `Set-Cookie` lines of every answer that sets cookies (a login's session cookie,
   * a fresh XSRF-TOKEN, a logout's expired session), as the service wrote them: append each to your
   * answer to the shopper's browser so it keeps what the service gave. The client's jar takes them too.
   */
  onSetCookie?: (setCookies: string[]) => void;
}

export interface StorefrontAuthClient {
  register(body: RegisterBody): Promise<Customer>;
  verify(body: VerifyBody): Promise<Customer>;
  resendVerification(body: IdentityBody): Promise<AcceptedStatus>;
  /**
   * Signs in with the password: a session (`auth_type: 'session'`), or, for a customer with a
   * second step, `auth_type: 'two_factor_required'` and no session yet: finish with `verifySecondStep`.
   */
  login(body: LoginBody): Promise<SignInAnswer>;
  /** Who am I: the session's customer, or a 401 `unauthenticated`. */
  session(): Promise<AuthSession>;
  forgotPassword(body: IdentityBody): Promise<AcceptedStatus>;
  resetPassword(body: ResetPasswordBody): Promise<PasswordResetStatus>;
  logout(): Promise<SignedOutStatus>;
  platform(): Promise<PlatformInfo>;
  live(): Promise<HealthStatus>;
  /** 200 when every check passes; otherwise throws `deployment_not_ready` with `checks`. */
  ready(): Promise<HealthReady>;
  /** The signed-in customer's live sessions, newest first. */
  listSessions(): Promise<SessionList>;
  /** Ends one of them by its `id`; 404 `not_found` for any id not the caller's. Ending the current one signs out. */
  revokeSession(id: string): Promise<RevokedStatus>;
  /** Ends every session but the current one. */
  revokeOtherSessions(): Promise<RevokedCountStatus>;
  /** The cookies the client holds (empty when the browser keeps them). */
  cookies(): ReadonlyMap<string, string>;
  /** The signed-in customer's data: account, sessions and audit events. At most one per minute. */
  exportAccount(): Promise<AccountExport>;
  /** Deletes the signed-in customer's account; a wrong password is `validation_failed` on `current_password`. */
  deleteAccount(body: DeleteAccountBody): Promise<DeletedStatus>;

  // The signed-in customer's own account.
  /** Signs every other device out; the client's own session cookie and XSRF-TOKEN are replaced. */
  changePassword(body: ChangePasswordBody): Promise<PasswordChangedStatus>;
  changeProfile(body: ProfileBody): Promise<Customer>;

  // Signing in with a code: a 404 `not_found` unless the store allows it.
  /** Sends a sign-in code to the identity when it has an account; 202 either way. */
  requestSignInCode(body: IdentityBody): Promise<AcceptedStatus>;
  /** Signs in with the code: sets the session cookie, or asks for a second step, as login does. */
  loginWithCode(body: VerifyBody): Promise<SignInAnswer>;

  // A second step (TOTP): a 404 `not_found` unless the store offers it.
  /** Finishes a sign-in that answered `two_factor_required`: `{ code }` of the app or `{ recovery_code }`. */
  verifySecondStep(body: SecondStepBody): Promise<AuthSession>;
  twoFactorStatus(): Promise<TwoFactorStatus>;
  /** A new secret for the app (text, `otpauth://` URI and QR code); nothing changes until `confirmTwoFactor`. */
  setUpTwoFactor(body: TwoFactorSetupBody): Promise<TwoFactorSetup>;
  /** Turns it on with a code of the app: the ten recovery codes, answered only here. */
  confirmTwoFactor(body: TwoFactorConfirmBody): Promise<RecoveryCodes>;
  /** Turns it off (the password and a code); 409 `two_factor_enforced` where the store requires it. */
  disableTwoFactor(body: TwoFactorChangeBody): Promise<TwoFactorOffStatus>;
  /** Ten new recovery codes (the password and a code); the old ones stop working. */
  renewRecoveryCodes(body: TwoFactorChangeBody): Promise<RecoveryCodes>;

  // Moving the account to another email address or phone number.
  /** Always 202 once `current_password` is right: a code goes to the new identity when it is free. */
  changeIdentity(body: IdentityChangeBody): Promise<AcceptedStatus>;
  /** Switches to the new identity; signs every other device out. */
  confirmIdentity(body: IdentityConfirmBody): Promise<Customer>;

  // Passkeys: a 404 `not_found` unless the store offers them. Each options call sets a cookie
  // binding its challenge to this client; hand the options to the browser's WebAuthn call (for
  // example @simplewebauthn/browser) and send back what it returns.
  /** Options for adding a passkey to the signed-in customer's account. */
  passkeyRegistrationOptions(): Promise<PasskeyCreationOptions>;
  /** Keeps the passkey the browser made; a refused credential is `validation_failed` on `credential`. */
  registerPasskey(body: PasskeyRegisterBody): Promise<Passkey>;
  listPasskeys(): Promise<PasskeyList>;
  /** Removes one of the customer's passkeys by its `id`; 404 `not_found` for any id not theirs. */
  removePasskey(id: string): Promise<DeletedStatus>;
  /** Options for signing in with a discoverable passkey. */
  passkeyLoginOptions(): Promise<PasskeyRequestOptions>;
  /** Signs in with the passkey's assertion: sets the session cookie, as login does; any refusal is 401 `unauthenticated`. */
  loginWithPasskey(body: PasskeyLoginBody): Promise<AuthSession>;

  // Sign-in providers (OpenID Connect): the sign-in itself is a browser navigation, not a call.
  /** The store's providers, for "Continue with …" buttons; empty when it has none. */
  listProviders(): Promise<ProviderList>;
  /**
   * The URL to send the browser to (a navigation, `location.href = …` or a link): the provider,
   * then back to `returnTo`, signed in or with `?error=`. With `link`, links the provider to the
   * signed-in customer instead (the URL then carries the session's CSRF token: make it after
   * signing in, and use it at once).
   */
  providerStartUrl(id: string, options?: { returnTo?: string; link?: boolean }): string;
  linkedProviders(): Promise<LinkedProviders>;
  /** A `409 last_sign_in_method` when it is the account's last way in. */
  unlinkProvider(id: string): Promise<UnlinkedStatus>;
}

const csrfCookie = 'XSRF-TOKEN';
const csrfHeader = 'x-xsrf-token';
const authPath = '/api/v1/customer/auth';

/**
 * Cookies for one origin. Domain and path are ignored: every cookie of this service has `Path=/`
 * but the passkey challenge's, which only the passkey paths read, so sending it further is harmless.
 */
class CookieJar {
  readonly values = new Map<string, string>();

  store(setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let expired = false;
      for (const attribute of attributes) {
        const [key = '', ...rest] = attribute.split('=');
        const argument = rest.join('=').trim();
        const lower = key.trim().toLowerCase();
        if (lower === 'max-age' && Number(argument) <= 0) expired = true;
        if (lower === 'expires' && Date.parse(argument) <= Date.now()) expired = true;
      }
      if (expired) this.values.delete(name);
      else this.values.set(name, value);
    }
  }

  /** The pairs of a `Cookie` request header, `a=1; b=2`. */
  seed(cookieHeader: string): void {
    for (const part of cookieHeader.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0) this.values.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
  }

  header(): string | undefined {
    if (this.values.size === 0) return undefined;
    return [...this.values].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

function browserCookie(name: string): string | undefined {
  const cookies = (globalThis as { document?: { cookie?: string } }).document?.cookie ?? '';
  for (const part of cookies.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Where a client sends its requests, and the cookies it keeps (none when the browser keeps them). */
interface Connection {
  base: string;
  fetch: Fetch;
  headers: Record<string, string> | undefined;
  jar: CookieJar | undefined;
  onSetCookie: ((setCookies: string[]) => void) | undefined;
  /**
   * The newest token the service gave in an `X-XSRF-TOKEN` answer header (with every cookie it
   * sets): a page on another host may not read the cookie, or may read a stale one first.
   */
  token: string | undefined;
}

function connect(options: StorefrontAuthClientOptions): Connection {
  const inBrowser = typeof (globalThis as { document?: unknown }).document !== 'undefined';
  return {
    base: new URL(options.baseUrl).href.replace(/\/+$/, ''),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    // Read at each request: a caller may replace `options.headers` on a live client.
    get headers() {
      return options.headers;
    },
    jar: (options.cookieJar ?? (!inBrowser || options.cookie !== undefined)) ? jarOf(options.cookie) : undefined,
    onSetCookie: options.onSetCookie,
    token: undefined,
  };
}

function jarOf(cookieHeader: string | undefined): CookieJar {
  const jar = new CookieJar();
  if (cookieHeader !== undefined) jar.seed(cookieHeader);
  return jar;
}

/** The token to echo: the one the service last handed over, else the cookie's. */
function csrfToken(connection: Connection): string | undefined {
  return connection.token ?? readCookie(connection, csrfCookie);
}

function readCookie({ jar }: Connection, name: string): string | undefined {
  const raw = jar !== undefined ? jar.values.get(name) : browserCookie(name);
  if (raw === undefined) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

type Method = 'GET' | 'POST';

/** One request: the parsed body of a 2xx, else a StorefrontAuthError. */
async function send<T>(connection: Connection, method: Method, path: string, body?: unknown): Promise<T> {
  const { response, text } = await exchange(connection, method, path, body);
  return answerOf<T>(response, text);
}

/** Sends the request and reads the whole answer; no answer at all is a `network_error`. */
async function exchange(
  connection: Connection,
  method: Method,
  path: string,
  body: unknown,
): Promise<{ response: Response; text: string }> {
  const { jar } = connection;
  const headers: Record<string, string> = { accept: 'application/json', ...connection.headers };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') {
    const token = csrfToken(connection);
    if (token !== undefined) headers[csrfHeader] = token;
  }
  const cookieHeader = jar?.header();
  if (cookieHeader !== undefined) headers['cookie'] = cookieHeader;

  const { response, text } = await fetchAnswer(connection.fetch, `${connection.base}${path}`, {
    method,
    headers,
    credentials: 'include',
    // Following a redirect would send the body (a password) on to wherever it points; an
    // answer that redirects is not the API's, whatever baseUrl names.
    redirect: 'manual',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  connection.token = response.headers.get(csrfHeader) ?? connection.token;
  // getSetCookie: Node 20's fetch; a browser never shows Set-Cookie to scripts.
  const setCookies = typeof response.headers.getSetCookie === 'function' ? response.headers.getSetCookie() : [];
  if (setCookies.length > 0) {
    jar?.store(setCookies);
    connection.onSetCookie?.(setCookies);
  }
  return { response, text };
}

/** A POST with the CSRF flow: a token when there is none, and one fresh token on a 419. */
async function post<T>(connection: Connection, path: string, body?: unknown): Promise<T> {
  const refreshCsrfToken = () => send<undefined>(connection, 'GET', '/api/v1/csrf-cookie');
  if (csrfToken(connection) === undefined) await refreshCsrfToken();
  try {
    return await send<T>(connection, 'POST', path, body);
  } catch (error) {
    if (!(error instanceof StorefrontAuthError) || error.code !== 'csrf_token_mismatch') throw error;
    await refreshCsrfToken();
    return send<T>(connection, 'POST', path, body);
  }
}

export function createStorefrontAuthClient(options: StorefrontAuthClientOptions): StorefrontAuthClient {
  const connection = connect(options);
  const get = <T>(path: string) => send<T>(connection, 'GET', path);
  const postTo = <T>(path: string, body?: unknown) => post<T>(connection, path, body);
  return {
    register: (body) => postTo(`${authPath}/register`, body),
    verify: (body) => postTo(`${authPath}/verify`, body),
    resendVerification: (body) => postTo(`${authPath}/verification/resend`, body),
    login: (body) => postTo(`${authPath}/login`, body),
    session: () => get(`${authPath}/session`),
    forgotPassword: (body) => postTo(`${authPath}/password/forgot`, body),
    resetPassword: (body) => postTo(`${authPath}/password/reset`, body),
    logout: () => postTo(`${authPath}/logout`),
    platform: () => get('/api/v1/platform'),
    live: () => get('/api/v1/health/live'),
    ready: () => get('/api/v1/health/ready'),
    listSessions: () => get(`${authPath}/sessions`),
    revokeSession: (id) => postTo(`${authPath}/sessions/${encodeURIComponent(id)}/revoke`),
    revokeOtherSessions: () => postTo(`${authPath}/sessions/revoke-others`),
    cookies: () => new Map(connection.jar?.values ?? []),
    exportAccount: () => get(`${authPath}/account/export`),
    deleteAccount: (body) => postTo(`${authPath}/account/delete`, body),

    changePassword: (body) => postTo(`${authPath}/password/change`, body),
    changeProfile: (body) => postTo(`${authPath}/profile`, body),

    requestSignInCode: (body) => postTo(`${authPath}/code/request`, body),
    loginWithCode: (body) => postTo(`${authPath}/code/login`, body),

    verifySecondStep: (body) => postTo(`${authPath}/two-factor/verify`, body),
    twoFactorStatus: () => get(`${authPath}/account/two-factor`),
    setUpTwoFactor: (body) => postTo(`${authPath}/account/two-factor/setup`, body),
    confirmTwoFactor: (body) => postTo(`${authPath}/account/two-factor/confirm`, body),
    disableTwoFactor: (body) => postTo(`${authPath}/account/two-factor/disable`, body),
    renewRecoveryCodes: (body) => postTo(`${authPath}/account/two-factor/recovery-codes`, body),

    changeIdentity: (body) => postTo(`${authPath}/identity/change`, body),
    confirmIdentity: (body) => postTo(`${authPath}/identity/confirm`, body),

    passkeyRegistrationOptions: () => postTo(`${authPath}/passkeys/register/options`),
    registerPasskey: (body) => postTo(`${authPath}/passkeys/register`, body),
    listPasskeys: () => get(`${authPath}/passkeys`),
    removePasskey: (id) => postTo(`${authPath}/passkeys/${encodeURIComponent(id)}/delete`),
    passkeyLoginOptions: () => postTo(`${authPath}/passkeys/login/options`),
    loginWithPasskey: (body) => postTo(`${authPath}/passkeys/login`, body),

    listProviders: () => get(`${authPath}/providers`),
    providerStartUrl(id, { returnTo, link = false } = {}) {
      const query = new URLSearchParams();
      if (returnTo !== undefined) query.set('return_to', returnTo);
      if (link) {
        query.set('link', '1');
        // A navigation sends no header: the link start takes the session's CSRF token here.
        query.set('xsrf_token', csrfToken(connection) ?? '');
      }
      const search = query.toString();
      return `${connection.base}${authPath}/providers/${encodeURIComponent(id)}/start${search === '' ? '' : `?${search}`}`;
    },
    linkedProviders: () => get(`${authPath}/providers/linked`),
    unlinkProvider: (id) => postTo(`${authPath}/providers/${encodeURIComponent(id)}/unlink`),
  };
}
