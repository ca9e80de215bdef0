import { randomUUID } from 'node:crypto';
import { baseLanguage, catalogue } from '../i18n/strings.js';
import { domainToASCII } from 'node:url';
import type { Clock } from '../clock.js';
import { isOnRpId, type Config, type IdentityMode } from '../config.js';
import { inStore, isUuid, type Database, type Queryable, type StoreQueryable } from '../storage/database.js';
import type { MessageBranding } from '../delivery/message.js';

export type StoreStatus = 'active' | 'paused' | 'closed';
export const storeStatuses: readonly StoreStatus[] = ['active', 'paused', 'closed'];

export type BotCheckProvider = 'turnstile' | 'hcaptcha' | 'recaptcha';
export const botCheckProviders: readonly BotCheckProvider[] = ['turnstile', 'hcaptcha', 'recaptcha'];
export type BotCheckOperation = 'register' | 'forgot' | 'resend' | 'code_request' | 'identity_change';
export const botCheckOperations: readonly BotCheckOperation[] = [
  'register',
  'forgot',
  'resend',
  'code_request',
  'identity_change',
];

/** A store's bot check as kept in its settings: the secret sealed (keys.ts, purpose `hooks`), never plain. */
export interface BotCheck {
  provider: BotCheckProvider;
  siteKey: string;
  sealedSecret: string;
  on: BotCheckOperation[];
  /** The provider's siteverify address unless set (a test's server, a proxy). */
  verifyUrl: string | null;
}

export interface StoreContext {
  id: string;
  /** 3–63 of a–z, 0–9 and '-', unique: how an operator names the store. */
  slug: string;
  name: string;
  status: StoreStatus;
  identityMode: IdentityMode;
  verificationRequired: boolean;
  /** `auth.sign_in_with_code`: customers may sign in with a code sent to their identity. */
  signInWithCode: boolean;
  /** Whether a sign-in from a device not seen for 90 days sends the customer a notice. */
  signInNotices: boolean;
  /** `auth.passkeys`: customers may add passkeys and sign in with them. */
  passkeys: boolean;
  /**
   * `auth.two_factor`: `optional`, a customer may set up a second step (TOTP); `required`, one who
   * has it may not turn it off; `off`, none is offered or asked for (a customer's is kept, unused).
   */
  twoFactor: TwoFactorMode;
  /** Whether the store offers a second step at all: the account routes of it exist. */
  twoFactorOffered: boolean;
  /**
   * `auth.phone_countries`: the countries (ISO 3166 alpha-2) a phone store's numbers may be in; a
   * number elsewhere cannot register and is sent nothing (a brake on SMS pumping). Empty: any.
   */
  phoneCountries: string[];
  /** `auth.bot_check`: the bot check the store's shoppers pass on the listed operations; null: none. */
  botCheck: BotCheck | null;
  /** How the store's page and emails look: each part null for the service's own. */
  branding: Branding;
  /** What of it an email shows: an uploaded logo as an address on the store's first host. */
  mailBranding: MessageBranding;
  /** The host names the store answers on, normalized (lowercase, IDNA, no port). */
  hosts: string[];
  /** Storefronts allowed to call with credentials, besides https:// and each host. */
  allowedOrigins: string[];
  /** The store's own From line; null: the deployment's MAIL_FROM under the store's name. */
  mailFrom: string | null;
  /** A label the SMS hook receives as `sender`. */
  smsSender: string | null;
  /**
   * The passkey relying party, fixed when the store gets its first host (that host, unless given)
   * and moved only by an explicit change; null: the deployment's WEBAUTHN_RP_ID.
   */
  webauthnRpId: string | null;
  /** The parent domain the store's session and XSRF-TOKEN cookies are set for; null: the deployment's COOKIE_DOMAIN. */
  cookieDomain: string | null;
  /** The languages the store's page, problems and messages speak (`i18n.languages`); `en` by default. */
  languages: string[];
  /** One of `languages`: what a customer who asks for none of them gets. */
  defaultLanguage: string;
  /** Taken from the change feed's sequence by every change. */
  version: number;
  updatedAt: string;
}

interface StoreRow {
  id: string;
  slug: string;
  name: string;
  status: StoreStatus;
  identity_mode: IdentityMode;
  settings: Record<string, unknown>;
  hosts: string[];
  allowed_origins: string[];
  mail_from: string | null;
  sms_sender: string | null;
  webauthn_rp_id: string | null;
  cookie_domain: string | null;
  version: string;
  updated_at: Date;
  deleted_at: Date | null;
}

/** The id of the store made from configuration on a deployment's first start. */
export const firstStoreId = 'default';

function toStore(row: StoreRow): StoreContext {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    status: row.status,
    identityMode: row.identity_mode,
    verificationRequired: row.settings['auth.customer_verification_required'] === true,
    // Absent in stores made before the setting existed: off.
    signInWithCode: row.settings['auth.sign_in_with_code'] === true,
    // On unless an operator turned it off: stores made before the setting existed get notices too.
    signInNotices: row.settings['auth.sign_in_notices'] !== false,
    // Off unless an operator turned it on, like signing in with a code.
    passkeys: row.settings['auth.passkeys'] === true,
    ...twoFactorOf(row.settings['auth.two_factor']),
    phoneCountries: stringList(row.settings['auth.phone_countries']),
    botCheck: botCheckOf(row.settings['auth.bot_check']),
    branding: brandingOf(row.settings),
    mailBranding: mailBrandingOf(brandingOf(row.settings), row.hosts),
    hosts: row.hosts,
    allowedOrigins: row.allowed_origins,
    mailFrom: row.mail_from,
    smsSender: row.sms_sender,
    webauthnRpId: row.webauthn_rp_id,
    cookieDomain: row.cookie_domain,
    ...languagesOf(row.settings),
    version: Number(row.version),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export const twoFactorModes = ['off', 'optional', 'required'] as const;
export type TwoFactorMode = (typeof twoFactorModes)[number];

function twoFactorOf(value: unknown): Pick<StoreContext, 'twoFactor' | 'twoFactorOffered'> {
  const twoFactor = twoFactorModes.find((mode) => mode === value) ?? 'off';
  return { twoFactor, twoFactorOffered: twoFactor !== 'off' };
}

/** A store's look: a logo, a support link (https://), a primary and an accent colour (#rrggbb). */
export interface Branding {
  logoUrl: string | null;
  primaryColour: string | null;
  accentColour: string | null;
  supportUrl: string | null;
}

// Each part a settings key of its own, so a patch of one leaves the others (the settings merge).
const brandingKeys = {
  logoUrl: 'branding.logo_url',
  primaryColour: 'branding.primary_colour',
  accentColour: 'branding.accent_colour',
  supportUrl: 'branding.support_url',
} as const satisfies Record<keyof Branding, string>;

function brandingOf(settings: Record<string, unknown>): Branding {
  const part = (key: string) => (typeof settings[key] === 'string' ? (settings[key] as string) : null);
  return {
    logoUrl: part(brandingKeys.logoUrl),
    primaryColour: part(brandingKeys.primaryColour),
    accentColour: part(brandingKeys.accentColour),
    supportUrl: part(brandingKeys.supportUrl),
  };
}

// An uploaded logo is a path on the store's hosts: a mail reader needs a whole address, and a store
// with no host of its own (the default one) has none to give.
function mailBrandingOf(branding: Branding, hosts: string[]): MessageBranding {
  const { logoUrl, primaryColour, supportUrl } = branding;
  const uploaded = logoUrl?.startsWith('/') === true;
  const host = hosts[0];
  return {
    logoUrl: !uploaded ? logoUrl : host === undefined ? null : `https://${host}${logoUrl}`,
    primaryColour,
    supportUrl,
  };
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** The stored form is written only by settingsOf; anything else (a hand edit) reads as no check. */
function botCheckOf(value: unknown): BotCheck | null {
  if (typeof value !== 'object' || value === null) return null;
  const stored = value as Record<string, unknown>;
  const provider = botCheckProviders.find((name) => name === stored['provider']);
  const { site_key: siteKey, sealed_secret: sealedSecret, verify_url: verifyUrl } = stored;
  if (provider === undefined || typeof siteKey !== 'string' || typeof sealedSecret !== 'string') return null;
  const on = stringList(stored['on']).filter((name): name is BotCheckOperation =>
    botCheckOperations.includes(name as BotCheckOperation),
  );
  return { provider, siteKey, sealedSecret, on, verifyUrl: typeof verifyUrl === 'string' ? verifyUrl : null };
}

export type StoreLanguages = Pick<StoreContext, 'languages' | 'defaultLanguage'>;

/**
 * A store's languages from its settings: those the service ships strings for (a file removed from
 * locales/ since the store listed it is dropped here, once, for every reader), and English when
 * none is left; stores made before languages existed speak English. The default is one of them.
 */
function languagesOf(settings: Record<string, unknown>): StoreLanguages {
  const listed = Array.isArray(settings['i18n.languages']) ? (settings['i18n.languages'] as unknown[]) : [];
  const shipped = listed.filter(
    (language): language is string => typeof language === 'string' && catalogue.has(language),
  );
  const languages = shipped.length > 0 ? shipped : [baseLanguage];
  const defaultLanguage = settings['i18n.default_language'];
  return {
    languages,
    defaultLanguage:
      typeof defaultLanguage === 'string' && languages.includes(defaultLanguage) ? defaultLanguage : languages[0]!,
  };
}

/** The columns of a store as toStore reads them, through the alias `s`. */
const storeColumns = `s.id, s.slug, s.name, s.status, s.identity_mode, s.settings, s.allowed_origins, s.mail_from,
  s.sms_sender, s.webauthn_rp_id, s.cookie_domain, s.version::text AS version, s.updated_at, s.deleted_at,
  ARRAY(SELECT h.host FROM store_hosts h WHERE h.store_id = s.id ORDER BY h.host) AS hosts`;

/** The storefronts a store trusts besides the deployment's: https:// and each host, and its allowed origins. */
export function storeOrigins(store: Pick<StoreContext, 'hosts' | 'allowedOrigins'> | null): string[] {
  if (store === null) return [];
  return [...store.hosts.map((host) => `https://${host}`), ...store.allowedOrigins];
}

export type StoreKey = { id: string } | { slug: string } | { host: string };

/** A live store (not deleted) by id, slug or host; null when none is. */
export async function loadStore(db: Queryable, key: StoreKey): Promise<StoreContext | null> {
  const [where, value] =
    'id' in key
      ? ['s.id = $1', key.id]
      : 'slug' in key
        ? ['s.slug = $1', key.slug]
        : ['s.id = (SELECT store_id FROM store_hosts WHERE host = $1)', key.host];
  const rows = await db.query<StoreRow>(
    `SELECT ${storeColumns} FROM stores s WHERE ${where} AND s.deleted_at IS NULL`,
    [value],
  );
  return rows[0] === undefined ? null : toStore(rows[0]);
}

/** A store named by an operator: its id (a UUID, or the first store's), or its slug. */
export async function findStoreNamed(db: Queryable, name: string): Promise<StoreContext | null> {
  // An id first when the name has an id's shape: a slug shaped like one cannot hide that store.
  if (isUuid(name) || name === firstStoreId) {
    const byId = await loadStore(db, { id: name });
    if (byId !== null) return byId;
  }
  return loadStore(db, { slug: name });
}

export type OnlyStore = { ok: true; store: StoreContext } | { ok: false; reason: 'no_store' | 'several_stores' };

/** The deployment's one live store, for a command that names none. */
export async function onlyStore(db: Queryable): Promise<OnlyStore> {
  const rows = await db.query<StoreRow>(`SELECT ${storeColumns} FROM stores s WHERE s.deleted_at IS NULL LIMIT 2`);
  if (rows.length === 0) return { ok: false, reason: 'no_store' };
  if (rows.length > 1) return { ok: false, reason: 'several_stores' };
  return { ok: true, store: toStore(rows[0]!) };
}

/** Live stores in slug order, after `afterSlug` (keyset pagination). */
export async function listStores(db: Queryable, { afterSlug = '', limit = 100 } = {}): Promise<StoreContext[]> {
  const rows = await db.query<StoreRow>(
    `SELECT ${storeColumns} FROM stores s WHERE s.deleted_at IS NULL AND s.slug > $1 ORDER BY s.slug LIMIT $2`,
    [afterSlug, limit],
  );
  return rows.map(toStore);
}

/** What every instance's directory needs to know about the deployment as a whole. */
export interface DeploymentStores {
  /** Live stores. */
  live: number;
  /** Whether any store has a host. */
  hosted: boolean;
  /** A live store's id (the only one when `live` is 1). */
  anyId: string | null;
}

export async function deploymentStores(db: Queryable): Promise<DeploymentStores> {
  const [row] = await db.query<{ live: number; hosted: boolean; any_id: string | null }>(
    `SELECT (SELECT count(*)::int FROM stores WHERE deleted_at IS NULL) AS live,
            EXISTS (SELECT 1 FROM store_hosts) AS hosted,
            (SELECT id FROM stores WHERE deleted_at IS NULL ORDER BY slug LIMIT 1) AS any_id`,
  );
  return { live: row!.live, hosted: row!.hosted, anyId: row!.any_id };
}

/** A change the feed reports: the store as it is now, or deleted. */
export interface StoreChange {
  id: string;
  version: number;
  store: StoreContext | null;
}

/** Stores changed after `version`, oldest change first, at most `limit`. */
export async function storeChangesAfter(db: Queryable, version: number, limit = 1000): Promise<StoreChange[]> {
  const rows = await db.query<StoreRow>(
    `SELECT ${storeColumns} FROM stores s WHERE s.version > $1 ORDER BY s.version LIMIT $2`,
    [version, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    version: Number(row.version),
    store: row.deleted_at === null ? toStore(row) : null,
  }));
}

/** The feed's newest version: where an instance starting now begins to follow it. */
export async function latestStoreVersion(db: Queryable): Promise<number> {
  const [row] = await db.query<{ v: string | null }>('SELECT max(version)::text AS v FROM stores');
  return Number(row?.v ?? 0);
}

// Any constant works; it only has to be the same for every instance of the service.
const storeChangeLockKey = 727_274_013;

/**
 * Store changes take turns: a transaction-scoped advisory lock, released by the commit. A changed
 * store takes the feed's next version while it is held, so versions commit in the order they are
 * taken and a reader of the feed never skips one committed late.
 */
async function lockStoreChanges(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [storeChangeLockKey]);
}

async function bumpStoreVersion(tx: Queryable, storeId: string, now: Date): Promise<void> {
  await tx.query(`UPDATE stores SET version = nextval('store_versions'), updated_at = $2 WHERE id = $1`, [
    storeId,
    now,
  ]);
}

/** Starts a change of a store in `tx`: see lockStoreChanges. */
async function beginStoreChange(tx: Queryable, storeId: string, now: Date): Promise<void> {
  await lockStoreChanges(tx);
  await bumpStoreVersion(tx, storeId, now);
}

/** Puts a store written some other way (an import) on the change feed, keeping its updated_at. */
export async function announceStoreChange(tx: Queryable, storeId: string): Promise<void> {
  await lockStoreChanges(tx);
  await tx.query(`UPDATE stores SET version = nextval('store_versions') WHERE id = $1`, [storeId]);
}

const hostLabel = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A host name as stores are keyed by it: lowercase, IDNA (punycode) for non-ASCII labels, no
 * trailing dot; null for anything that is not a plain host name (a port, a wildcard, an address).
 */
export function normalizeHost(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || /[\s:/*@[\]]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed);
  if (ascii === '' || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (!labels.every((label) => hostLabel.test(label))) return null;
  // An address is not a host a store can own: a browser reads a name ending in a number as IPv4
  // (127.1, 1.2.3, 0x7f.1 alike), so no such name is one.
  if (/^(\d+|0x[0-9a-f]*)$/.test(labels.at(-1)!)) return null;
  return ascii;
}

/** The host of a request's Host header: its name without the port, normalized; null when none. */
export function requestHost(header: string | undefined): string | null {
  if (header === undefined) return null;
  return normalizeHost(header.startsWith('[') ? '' : header.replace(/:\d*$/, ''));
}

export const storeSlugPattern = /^[a-z0-9-]{3,63}$/;

/**
 * Creates the store row from configuration on a deployment's first start, and never again. Under
 * the store-change lock: the insert takes the feed's first version (its column's default) before
 * it commits, so an instance starting at the same moment would otherwise find the sequence used,
 * insert nothing, and read no store until the other's commit, answering 404 meanwhile.
 */
export async function ensureStore(db: Database, clock: Clock, initial: Config['initialStore']): Promise<void> {
  await db.transaction(async (tx) => {
    await lockStoreChanges(tx);
    await insertFirstStore(tx, clock, initial);
  });
}

async function insertFirstStore(tx: Queryable, clock: Clock, initial: Config['initialStore']): Promise<void> {
  const now = clock.now();
  // The sequence is untouched only while no store was ever made: a deployment whose stores were
  // all deleted gets none back from a restart.
  await tx.query(
    `INSERT INTO stores (id, slug, name, status, identity_mode, settings, created_at, updated_at)
     SELECT $1, $1, $2, 'active', $3, $4::text::jsonb, $5, $5
      WHERE NOT (SELECT is_called FROM store_versions)
     ON CONFLICT (id) DO NOTHING`,
    [
      firstStoreId,
      initial.name,
      initial.identityMode,
      JSON.stringify({ 'auth.customer_verification_required': initial.verificationRequired }),
      now,
    ],
  );
}

export interface StoreChanges {
  name?: string;
  status?: StoreStatus;
  identityMode?: IdentityMode;
  verificationRequired?: boolean;
  signInWithCode?: boolean;
  signInNotices?: boolean;
  passkeys?: boolean;
  twoFactor?: TwoFactorMode;
  phoneCountries?: string[];
  /** Null removes the store's bot check. */
  botCheck?: BotCheck | null;
  /** The parts given; a null part goes back to the service's own. */
  branding?: Partial<Branding>;
  allowedOrigins?: string[];
  mailFrom?: string | null;
  smsSender?: string | null;
  webauthnRpId?: string | null;
  cookieDomain?: string | null;
  /**
   * Either or both: languages alone keep the default, a default alone keeps the languages. The
   * default must end up one of the languages (see mergeLanguages).
   */
  languages?: Partial<StoreLanguages>;
}

/**
 * A change of a store's languages on top of its current ones; null when the default would not be
 * one of the languages. Made under the store row's lock on update, so two changes racing (one
 * dropping a language, one making it the default) cannot leave a default the store does not speak.
 */
export function mergeLanguages(current: StoreLanguages, change: Partial<StoreLanguages>): StoreLanguages | null {
  const languages = change.languages ?? current.languages;
  const defaultLanguage = change.defaultLanguage ?? current.defaultLanguage;
  return languages.includes(defaultLanguage) ? { languages, defaultLanguage } : null;
}

export interface NewStore extends StoreChanges {
  slug: string;
  name: string;
  identityMode: IdentityMode;
  hosts?: string[];
}

/** Why a store's cookie domain cannot be: it covers none of its hosts, or a host of another store. */
export type CookieDomainRefusal =
  { ok: false; reason: 'cookie_domain_off_hosts' } | { ok: false; reason: 'cookie_domain_shared'; host: string };

export type StoreCreateResult =
  | { ok: true; store: StoreContext }
  | { ok: false; reason: 'slug_taken' }
  | { ok: false; reason: 'host_taken'; host: string }
  | HostUnderCookieDomain
  | CookieDomainRefusal;

/** A host under another store's cookie domain would receive that store's session cookies. */
export type HostUnderCookieDomain = { ok: false; reason: 'host_under_cookie_domain'; host: string };

/** Whether `host` is `domain` or under it: a cookie for the domain reaches it. */
const isUnder = isOnRpId;

/**
 * A store's cookie domain checked against the hosts: it must cover one of the store's own, and no
 * other store's, whose shoppers' browsers would otherwise carry this store's session cookie to a
 * host this store does not control. Run under the store-change lock, so a host added to another
 * store meanwhile is seen (addStoreHost checks the other way round under the same lock).
 */
async function checkCookieDomain(
  tx: Queryable,
  storeId: string,
  domain: string,
  hosts: readonly string[],
): Promise<CookieDomainRefusal | null> {
  if (!hosts.some((host) => isUnder(host, domain))) return { ok: false, reason: 'cookie_domain_off_hosts' };
  const [other] = await tx.query<{ host: string }>(
    `SELECT host FROM store_hosts WHERE store_id <> $1 AND (host = $2 OR right(host, length($2) + 1) = '.' || $2)
      ORDER BY host LIMIT 1`,
    [storeId, domain],
  );
  return other === undefined ? null : { ok: false, reason: 'cookie_domain_shared', host: other.host };
}

/** The first of `hosts` under another store's cookie domain, which would receive that store's cookies. */
async function hostUnderOtherCookieDomain(
  tx: Queryable,
  storeId: string,
  hosts: readonly string[],
): Promise<string | undefined> {
  if (hosts.length === 0) return undefined;
  const rows = await tx.query<{ cookie_domain: string }>(
    'SELECT cookie_domain FROM stores WHERE id <> $1 AND deleted_at IS NULL AND cookie_domain IS NOT NULL',
    [storeId],
  );
  return hosts.find((host) => rows.some((row) => isUnder(host, row.cookie_domain)));
}

function settingsOf(changes: StoreChanges): Record<string, unknown> {
  return {
    ...(changes.languages?.languages === undefined ? {} : { 'i18n.languages': changes.languages.languages }),
    ...(changes.languages?.defaultLanguage === undefined
      ? {}
      : { 'i18n.default_language': changes.languages.defaultLanguage }),
    ...(changes.verificationRequired === undefined
      ? {}
      : { 'auth.customer_verification_required': changes.verificationRequired }),
    ...(changes.signInWithCode === undefined ? {} : { 'auth.sign_in_with_code': changes.signInWithCode }),
    ...(changes.signInNotices === undefined ? {} : { 'auth.sign_in_notices': changes.signInNotices }),
    ...(changes.passkeys === undefined ? {} : { 'auth.passkeys': changes.passkeys }),
    ...(changes.twoFactor === undefined ? {} : { 'auth.two_factor': changes.twoFactor }),
    ...(changes.phoneCountries === undefined ? {} : { 'auth.phone_countries': changes.phoneCountries }),
    ...(changes.botCheck === undefined ? {} : { 'auth.bot_check': storedBotCheck(changes.botCheck) }),
    ...Object.fromEntries(
      Object.entries(changes.branding ?? {}).map(([part, value]) => [brandingKeys[part as keyof Branding], value]),
    ),
  };
}

function storedBotCheck(check: BotCheck | null): Record<string, unknown> | null {
  if (check === null) return null;
  const { provider, siteKey, sealedSecret, on, verifyUrl } = check;
  return { provider, site_key: siteKey, sealed_secret: sealedSecret, on, verify_url: verifyUrl };
}

/** Adds hosts to a store in `tx`; those another store holds are left out. The hosts added. */
async function insertHosts(tx: Queryable, storeId: string, hosts: readonly string[]): Promise<Set<string>> {
  if (hosts.length === 0) return new Set();
  const rows = await tx.query<{ host: string }>(
    'INSERT INTO store_hosts (host, store_id) SELECT unnest($1::text[]), $2 ON CONFLICT (host) DO NOTHING RETURNING host',
    [hosts, storeId],
  );
  return new Set(rows.map((row) => row.host));
}

/**
 * Makes a store with its hosts (already normalized) in `tx`, which may hold other work of the same
 * call (an idempotency key). The unique slug and hosts decide a race (a second insert waits for
 * the first to commit or roll back); a refusal rolls back to a savepoint, so it writes nothing and
 * leaves `tx` usable. The store-change lock is taken after the hosts, for the cookie domains' checks
 * and the feed's version, so creates take turns only for their end.
 */
export async function insertStore(tx: Queryable, clock: Clock, store: NewStore): Promise<StoreCreateResult> {
  const now = clock.now();
  const id = randomUUID();
  const hosts = store.hosts ?? [];
  // The relying party is fixed here (the first host given, unless named) so that adding hosts
  // later never moves it and strands the store's passkeys.
  const rpId = store.webauthnRpId ?? hosts[0] ?? null;
  await tx.query('SAVEPOINT new_store');
  // Version 0 until the feed's next one is taken under the lock: a version taken earlier could
  // commit after a later one, and a reader past it would never see this store.
  const inserted = await tx.query(
    `INSERT INTO stores (id, slug, name, status, identity_mode, settings, allowed_origins, mail_from, sms_sender,
                         webauthn_rp_id, cookie_domain, version, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10, $12, 0, $11, $11)
     ON CONFLICT (slug) WHERE deleted_at IS NULL DO NOTHING RETURNING 1`,
    [
      id,
      store.slug,
      store.name,
      store.status ?? 'active',
      store.identityMode,
      JSON.stringify(settingsOf(store)),
      store.allowedOrigins ?? [],
      store.mailFrom ?? null,
      store.smsSender ?? null,
      rpId,
      now,
      store.cookieDomain ?? null,
    ],
  );
  if (inserted.length === 0) {
    await tx.query('ROLLBACK TO SAVEPOINT new_store');
    return { ok: false, reason: 'slug_taken' };
  }
  const added = await insertHosts(tx, id, hosts);
  const taken = hosts.find((host) => !added.has(host));
  if (taken !== undefined) {
    await tx.query('ROLLBACK TO SAVEPOINT new_store');
    return { ok: false, reason: 'host_taken', host: taken };
  }
  await lockStoreChanges(tx);
  const refusal = await checkHostsAndCookies(tx, id, hosts, store.cookieDomain ?? null);
  if (refusal !== null) {
    await tx.query('ROLLBACK TO SAVEPOINT new_store');
    return refusal;
  }
  await tx.query('RELEASE SAVEPOINT new_store');
  await bumpStoreVersion(tx, id, now);
  return { ok: true, store: (await loadStore(tx, { id }))! };
}

/** A new store's hosts and cookie domain against the other stores' (under the store-change lock). */
async function checkHostsAndCookies(
  tx: Queryable,
  storeId: string,
  hosts: readonly string[],
  cookieDomain: string | null,
): Promise<HostUnderCookieDomain | CookieDomainRefusal | null> {
  const reached = await hostUnderOtherCookieDomain(tx, storeId, hosts);
  if (reached !== undefined) return { ok: false, reason: 'host_under_cookie_domain', host: reached };
  return cookieDomain === null ? null : checkCookieDomain(tx, storeId, cookieDomain, hosts);
}

/** Makes a store with its hosts (already normalized); nothing is made when the slug or a host is taken. */
export async function createStore(db: Database, clock: Clock, store: NewStore): Promise<StoreCreateResult> {
  return db.transaction((tx) => insertStore(tx, clock, store));
}

export type StoreUpdateResult =
  /** `strandedPasskeys`: passkeys made for the relying party ID this change moved away from. */
  | { ok: true; store: StoreContext; strandedPasskeys: number }
  | { ok: false; reason: 'identity_mode_in_use'; customers: number }
  | CookieDomainRefusal
  | { ok: false; reason: 'default_language_not_spoken'; current: StoreLanguages }
  | { ok: false; reason: 'no_store' | 'several_stores' };

export interface StoreUpdateOptions {
  /** The store to change, by slug or id; without it, the deployment's only store. */
  store?: string | undefined;
  /** Switch the identity mode even while customers exist. */
  force?: boolean;
  /**
   * Counts the store's customers inside the update's transaction, after the store row is locked;
   * needed to switch the identity mode without `force`. Handed in (countCustomers of
   * src/auth/tables/customers.ts) because the customers table is the domain's, and the store sits
   * below the domain.
   */
  countCustomers?: (tx: StoreQueryable) => Promise<number>;
  /** Counts the store's passkeys (countStorePasskeys of src/auth/tables/passkeys.ts), handed in likewise. */
  countPasskeys?: (tx: StoreQueryable) => Promise<number>;
}

async function targetStore(db: Queryable, store: string | undefined): Promise<OnlyStore> {
  if (store === undefined) return onlyStore(db);
  const found = await findStoreNamed(db, store);
  return found === null ? { ok: false, reason: 'no_store' } : { ok: true, store: found };
}

/** Applies operator changes. Switching the identity mode under existing customers needs `force`. */
export async function updateStore(
  db: Database,
  clock: Clock,
  changes: StoreChanges,
  { store, force = false, countCustomers, countPasskeys }: StoreUpdateOptions = {},
): Promise<StoreUpdateResult> {
  const target = await targetStore(db, store);
  if (!target.ok) return target;
  const storeId = target.store.id;
  return db.transaction(async (tx) => {
    const current = await tx.query<{ identity_mode: IdentityMode; settings: Record<string, unknown> }>(
      'SELECT identity_mode, settings FROM stores WHERE id = $1 AND deleted_at IS NULL FOR UPDATE',
      [storeId],
    );
    if (current[0] === undefined) return { ok: false, reason: 'no_store' };
    const settings = settingsOf(changes);
    if (changes.languages !== undefined) {
      const languages = languagesOf(current[0].settings);
      const merged = mergeLanguages(languages, changes.languages);
      if (merged === null) return { ok: false, reason: 'default_language_not_spoken', current: languages };
      // Both written, so the pair kept is the one checked.
      settings['i18n.languages'] = merged.languages;
      settings['i18n.default_language'] = merged.defaultLanguage;
    }
    if (changes.identityMode !== undefined && changes.identityMode !== current[0].identity_mode && !force) {
      // A caller that forgot the count must not switch the mode under customers unchecked.
      if (countCustomers === undefined) throw new Error('switching the identity mode needs countCustomers or force');
      const customers = await countCustomers(inStore(tx, storeId));
      if (customers > 0) return { ok: false, reason: 'identity_mode_in_use', customers };
    }
    const now = clock.now();
    await beginStoreChange(tx, storeId, now);
    // Read under the lock, and only for the changes checked against it: the hosts and relying party are current.
    const checked = changes.cookieDomain !== undefined || changes.webauthnRpId !== undefined;
    const before = checked ? (await loadStore(tx, { id: storeId }))! : target.store;
    if (changes.cookieDomain !== undefined && changes.cookieDomain !== null) {
      const refusal = await checkCookieDomain(tx, storeId, changes.cookieDomain, before.hosts);
      if (refusal !== null) return refusal;
    }
    const rpMoved = changes.webauthnRpId !== undefined && changes.webauthnRpId !== before.webauthnRpId;
    const strandedPasskeys = rpMoved && countPasskeys !== undefined ? await countPasskeys(inStore(tx, storeId)) : 0;
    const optional = (value: string | null | undefined) => (value === undefined ? null : [value]);
    await tx.query(
      `UPDATE stores SET name = COALESCE($2, name), status = COALESCE($3, status),
              identity_mode = COALESCE($4, identity_mode), settings = settings || $5::text::jsonb,
              allowed_origins = COALESCE($6, allowed_origins),
              mail_from = CASE WHEN $7::text[] IS NULL THEN mail_from ELSE ($7::text[])[1] END,
              sms_sender = CASE WHEN $8::text[] IS NULL THEN sms_sender ELSE ($8::text[])[1] END,
              webauthn_rp_id = CASE WHEN $9::text[] IS NULL THEN webauthn_rp_id ELSE ($9::text[])[1] END,
              cookie_domain = CASE WHEN $10::text[] IS NULL THEN cookie_domain ELSE ($10::text[])[1] END
        WHERE id = $1`,
      [
        storeId,
        changes.name ?? null,
        changes.status ?? null,
        changes.identityMode ?? null,
        JSON.stringify(settings),
        changes.allowedOrigins ?? null,
        optional(changes.mailFrom),
        optional(changes.smsSender),
        optional(changes.webauthnRpId),
        optional(changes.cookieDomain),
      ],
    );
    return { ok: true, store: (await loadStore(tx, { id: storeId }))!, strandedPasskeys };
  });
}

export type HostChangeResult =
  | { ok: true; store: StoreContext }
  | { ok: false; reason: 'no_store' | 'host_taken' | 'no_such_host' }
  | HostUnderCookieDomain
  | { ok: false; reason: 'relying_party_in_use'; passkeys: number };

export interface HostChangeOptions {
  /** Counts the store's passkeys (countStorePasskeys of src/auth/tables/passkeys.ts). */
  countPasskeys: (tx: StoreQueryable) => Promise<number>;
  /** The deployment's relying party ID (WEBAUTHN_RP_ID), which a store without one of its own uses. */
  deploymentRpId: string;
  /** Remove the host even when the store's passkeys would stop working. */
  force?: boolean;
}

/**
 * Gives a store one more host (normalized); refused when another store holds it, or when another
 * store's cookie domain covers it. A store without a relying party ID gets one: the host, unless
 * its passkeys were made for the deployment's, which it then keeps.
 */
export async function addStoreHost(
  db: Database,
  clock: Clock,
  storeId: string,
  host: string,
  { countPasskeys, deploymentRpId }: Omit<HostChangeOptions, 'force'>,
): Promise<HostChangeResult> {
  try {
    return await db.transaction(async (tx) => {
      if ((await loadStore(tx, { id: storeId })) === null) return { ok: false, reason: 'no_store' };
      // The host first, the lock after (as a create takes them): in the other order a create
      // holding the host and waiting for the lock, and this holding the lock and waiting for the
      // host, would wait for each other.
      if ((await insertHosts(tx, storeId, [host])).size === 0) {
        const [owner] = await tx.query<{ store_id: string }>('SELECT store_id FROM store_hosts WHERE host = $1', [
          host,
        ]);
        if (owner?.store_id !== storeId) return { ok: false, reason: 'host_taken' };
        // A host the store has already is no change: the feed is not bumped for it.
        return { ok: true, store: (await loadStore(tx, { id: storeId }))! };
      }
      await lockStoreChanges(tx);
      // Read after the lock: a deletion committed meanwhile is seen, and the host goes with the rollback.
      const store = await loadStore(tx, { id: storeId });
      if (store === null) throw new HostRefused({ ok: false, reason: 'no_store' });
      if ((await hostUnderOtherCookieDomain(tx, storeId, [host])) !== undefined)
        throw new HostRefused({ ok: false, reason: 'host_under_cookie_domain', host });
      if (store.webauthnRpId === null) {
        const rpId = (await countPasskeys(inStore(tx, storeId))) > 0 ? deploymentRpId : host;
        await tx.query('UPDATE stores SET webauthn_rp_id = $2 WHERE id = $1', [storeId, rpId]);
      }
      await bumpStoreVersion(tx, storeId, clock.now());
      return { ok: true, store: (await loadStore(tx, { id: storeId }))! };
    });
  } catch (error) {
    if (error instanceof HostRefused) return error.result;
    throw error;
  }
}

/** Rolls back a host added when the checks after the lock refuse it. */
class HostRefused extends Error {
  constructor(readonly result: Extract<HostChangeResult, { ok: false }>) {
    super(result.reason);
  }
}

/**
 * Takes a host from a store. When no host left is on the store's relying party ID, its passkeys
 * could no longer sign in: refused while it has any, unless forced; without passkeys the relying
 * party follows to the first host left (or the deployment's when none is).
 */
export async function removeStoreHost(
  db: Database,
  clock: Clock,
  storeId: string,
  host: string,
  { countPasskeys, force = false }: Omit<HostChangeOptions, 'deploymentRpId'>,
): Promise<HostChangeResult> {
  return db.transaction(async (tx) => {
    await lockStoreChanges(tx);
    const store = await loadStore(tx, { id: storeId });
    if (store === null) return { ok: false, reason: 'no_store' };
    if (!store.hosts.includes(host)) return { ok: false, reason: 'no_such_host' };
    const left = store.hosts.filter((kept) => kept !== host);
    const rpId = store.webauthnRpId;
    if (rpId !== null && !left.some((kept) => isOnRpId(kept, rpId))) {
      const passkeys = await countPasskeys(inStore(tx, storeId));
      if (passkeys > 0 && !force) return { ok: false, reason: 'relying_party_in_use', passkeys };
      if (passkeys === 0)
        await tx.query('UPDATE stores SET webauthn_rp_id = $2 WHERE id = $1', [storeId, left[0] ?? null]);
    }
    await tx.query('DELETE FROM store_hosts WHERE store_id = $1 AND host = $2', [storeId, host]);
    await bumpStoreVersion(tx, storeId, clock.now());
    return { ok: true, store: (await loadStore(tx, { id: storeId }))! };
  });
}

/**
 * Deletes a store: at once it stops resolving and its hosts and slug are free; what it holds is
 * erased afterwards, in batches (eraseDeletedStores). False when there was no such live store.
 */
export async function markStoreDeleted(db: Database, clock: Clock, storeId: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const now = clock.now();
    await lockStoreChanges(tx);
    const rows = await tx.query(
      `UPDATE stores SET deleted_at = $2, status = 'closed' WHERE id = $1 AND deleted_at IS NULL RETURNING 1`,
      [storeId, now],
    );
    if (rows.length === 0) return false;
    await tx.query('DELETE FROM store_hosts WHERE store_id = $1', [storeId]);
    await bumpStoreVersion(tx, storeId, now);
    return true;
  });
}

/** Stores deleted and not yet erased. */
export async function deletedStores(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ id: string }>('SELECT id FROM stores WHERE deleted_at IS NOT NULL ORDER BY deleted_at');
  return rows.map((row) => row.id);
}

/** Removes a deleted store's own row, once nothing of it is left (the foreign keys say so otherwise). */
export async function dropStoreRow(db: Queryable, storeId: string): Promise<void> {
  await db.query('DELETE FROM stores WHERE id = $1 AND deleted_at IS NOT NULL', [storeId]);
}

/** The identity modes the live stores use: the channels the deployment must be able to send on. */
export async function identityModesInUse(db: Queryable): Promise<IdentityMode[]> {
  const rows = await db.query<{ identity_mode: IdentityMode }>(
    'SELECT DISTINCT identity_mode FROM stores WHERE deleted_at IS NULL ORDER BY identity_mode',
  );
  return rows.map((row) => row.identity_mode);
}
