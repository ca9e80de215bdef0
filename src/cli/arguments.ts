/**
 * The command line's words: its usage text and the parsing of arguments into a command. Apart from
 * the entry (main.ts), which runs as soon as it is loaded.
 */
import { parseArgs } from 'node:util';
import { auditEvents, type AuditEvent } from '../audit.js';
import { outboxStatuses, type OutboxStatus } from '../delivery/outbox.js';
import { NewWebhookBody } from '../http/admin/webhook-schemas.js';
import {
  distinct,
  FieldError,
  newStoreLanguages,
  storeCookieDomain,
  storeHost,
  storeLanguage,
  storeLanguageChange,
  storeLanguages,
  storeBrandingUrl,
  storeAccentColour,
  storeMailFrom,
  storePrimaryColour,
  storeName,
  storeOrigin,
  storeSlug,
  storeSmsSender,
  storePhoneCountry,
} from '../store/fields.js';
import {
  botCheckOperations,
  botCheckProviders,
  storeStatuses,
  type NewStore,
  type StoreChanges,
  type StoreStatus,
  twoFactorModes,
} from '../store/store.js';
import type { AdminCommand, BotCheckCommand, StoreCommand } from './commands.js';
import type { CustomersCommand } from './customer-transfer.js';

export const usage = `Usage: storefront-auth <command>

  serve                                   run the service
  migrate                                 apply database migrations
  store list                              every store, by slug
  store create --slug S --name N [--host H]... [--identity-mode email|phone]
            [--verification-required true|false] [any setting of store set]
                                          make a store (slug: 3 to 63 of a-z, 0-9 and -)
  store show [--store S]                  print a store
  store set [--store S] [--name N] [--identity-mode email|phone] [--verification-required true|false]
            [--sign-in-with-code true|false] [--sign-in-notices true|false]
            [--passkeys true|false] [--two-factor off|optional|required]
            [--status active|paused|closed] [--force]
            [--allowed-origin O]... [--mail-from "Name <address>"] [--sms-sender LABEL]
            [--webauthn-rp-id HOST] [--cookie-domain DOMAIN] [--languages en,ar]
            [--default-language en] [--phone-countries DE,AT]
            [--logo-url URL] [--primary-colour #RRGGBB] [--accent-colour #RRGGBB] [--support-url URL]
                                          --allowed-origin replaces the list; an empty value
                                          clears --allowed-origin, --mail-from, --sms-sender,
                                          --webauthn-rp-id, --cookie-domain and each branding flag
                                          (the service's own look); --languages replaces the list
                                          and must keep the default unless --default-language
                                          names a new one (on create: the first language);
                                          --phone-countries: the only countries a phone store's
                                          numbers may be in (an empty value: any)
  store set [--store S] --bot-check turnstile|hcaptcha|recaptcha --bot-check-site-key K
            --bot-check-secret-file FILE --bot-check-on register,forgot,resend,code_request,identity_change
            [--bot-check-verify-url URL]  | --bot-check off
                                          a bot check on those operations (the secret is stored sealed)
  store hosts add [--store S] <host>      let the store answer on a host (no port, no wildcard)
  store hosts remove [--store S] [--force] <host>
                                          --force: even when it is the last host on the relying
                                          party ID of the store's passkeys (they stop working)
  store providers add [--store S] --id ID (--preset google|apple|microsoft | --issuer URL)
            --client-id C (--client-secret X | --client-secret-file FILE
            | --private-key FILE --key-id K --team-id T)
            [--name N] [--scopes "openid email profile"]
                                          add a sign-in provider (or replace the one of that id);
                                          the secret (or Apple's .p8 key) is stored sealed
  store providers remove [--store S] --id ID
  store providers list [--store S]        the store's providers, without their secrets
  store delete --store S --confirm S      delete a store (--confirm repeats its slug): its slug and
                                          hosts are free at once, what it held is erased in the
                                          background by the running service
  webhooks add [--store S] --url U --events E,E|* [--description D]
                                          add a webhook endpoint: the store's events of those types
                                          (* for every type but customer.signed_in) are POSTed to U,
                                          signed; prints it with its secret, shown this once
  webhooks list [--store S]               the store's webhook endpoints, without their secrets
  webhooks remove [--store S] --id ID     remove an endpoint, and its deliveries with it
  customer show <identity>                print a customer
  customer delete <identity> --yes        delete a customer and their data, as they can themselves
  customer sessions <identity>            a customer's live sessions, newest first
  customer revoke-sessions <identity>     sign a customer out everywhere (audited)
  customer block <identity> --reason R [--until T]
                                          block a customer: sessions end, no sign-in opens one
                                          until T (an ISO 8601 date and time) or unblock (audited)
  customer unblock <identity>             lift a customer's block (audited)
  customer passkeys <identity>            a customer's passkeys, newest first
  customer remove-passkey <identity> <id> remove one of a customer's passkeys (audited)
  customers import [--store S] [--dry-run] <file>
                                          import customers from an NDJSON file (the admin API's
                                          import format); exits 1 naming <file>.refused when a
                                          line was refused; --dry-run checks and writes nothing
  customers export [--store S] [<file>]   every customer of the store as NDJSON, to the file or
                                          standard output
  outbox list [--status pending|sent|failed|dropped]
  outbox retry <id>                       send a failed message again
  audit [--customer <identity>] [--event <event>] [--limit N]
                                          security events, newest first (default 100)
  prune                                   delete what has outlived its retention now, in every store
  import <folder>                         copy the rows of an earlier version's PGlite folder
                                          (DATA_DIR/pgdata) into the first store, without customers
  backup <file>                           save every table, read in one snapshot, into a gzip file
                                          (also while the service runs); written under a temporary
                                          name and renamed when complete
  breached load <file>                    load breached-password SHA-1s (HEX40:COUNT lines, the Pwned
                                          Passwords download or part of it) as the local copy new
                                          passwords are checked against; run again to resume
  restore [--force] <file>                load a backup into an empty database (a fresh DATA_DIR),
                                          in one transaction; --force replaces what it holds

  --store S names a store by slug (or id). The commands about one store (store show, set, hosts,
  providers, delete, webhooks, customer, customers, outbox, audit) act on the only store without
  it; with several stores they need it.

Configuration comes from the environment (see the README).`;

export class UsageError extends Error {}

/** `import <folder>`: not an admin command, it reads a second database. */
export interface ImportCommand {
  name: 'import';
  folder: string;
}

/** `backup <file>` and `restore <file>`: not admin commands, they read or replace the whole database. */
export type BackupCommand = { name: 'backup'; file: string } | { name: 'restore'; file: string; force: boolean };

/** `breached load <file>`: not an admin command, it fills the deployment's corpus table from a file. */
export interface BreachedLoadCommand {
  name: 'breached.load';
  file: string;
}

function choice<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function readArguments(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      store: { type: 'string' },
      slug: { type: 'string' },
      name: { type: 'string' },
      host: { type: 'string', multiple: true },
      'identity-mode': { type: 'string' },
      'verification-required': { type: 'string' },
      'sign-in-with-code': { type: 'string' },
      'sign-in-notices': { type: 'string' },
      passkeys: { type: 'string' },
      'two-factor': { type: 'string' },
      'phone-countries': { type: 'string' },
      'bot-check': { type: 'string' },
      'bot-check-site-key': { type: 'string' },
      'bot-check-secret-file': { type: 'string' },
      'bot-check-on': { type: 'string' },
      'bot-check-verify-url': { type: 'string' },
      status: { type: 'string' },
      'allowed-origin': { type: 'string', multiple: true },
      'mail-from': { type: 'string' },
      'logo-url': { type: 'string' },
      'primary-colour': { type: 'string' },
      'accent-colour': { type: 'string' },
      'support-url': { type: 'string' },
      'sms-sender': { type: 'string' },
      'webauthn-rp-id': { type: 'string' },
      'cookie-domain': { type: 'string' },
      languages: { type: 'string' },
      'default-language': { type: 'string' },
      id: { type: 'string' },
      preset: { type: 'string' },
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      'client-secret-file': { type: 'string' },
      'private-key': { type: 'string' },
      'key-id': { type: 'string' },
      'team-id': { type: 'string' },
      scopes: { type: 'string' },
      confirm: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
      reason: { type: 'string' },
      until: { type: 'string' },
      // No defaults: a flag that was not given stays out of `values`, so it can be told apart.
      force: { type: 'boolean' },
      yes: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      customer: { type: 'string' },
      event: { type: 'string' },
      limit: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

type Flags = ReturnType<typeof readArguments>['values'];
type Flag = keyof Flags;

const botCheckFlags = [
  'bot-check',
  'bot-check-site-key',
  'bot-check-secret-file',
  'bot-check-on',
  'bot-check-verify-url',
] as const satisfies readonly Flag[];

/** What `store set` changes, and `store create` may set from the start. */
const storeSettingFlags = [
  'name',
  'identity-mode',
  'verification-required',
  'sign-in-with-code',
  'sign-in-notices',
  'passkeys',
  'two-factor',
  'phone-countries',
  'status',
  'allowed-origin',
  'mail-from',
  'sms-sender',
  'webauthn-rp-id',
  'cookie-domain',
  'languages',
  'default-language',
  'logo-url',
  'primary-colour',
  'accent-colour',
  'support-url',
] as const satisfies readonly Flag[];

interface CommandShape {
  /** The flags it takes besides --help. */
  flags: readonly Flag[];
  /** How many arguments it takes after its words. */
  arguments: number;
}

const commands: Record<string, CommandShape> = {
  serve: { flags: [], arguments: 0 },
  migrate: { flags: [], arguments: 0 },
  prune: { flags: [], arguments: 0 },
  'store list': { flags: [], arguments: 0 },
  'store create': { flags: ['slug', 'host', ...storeSettingFlags], arguments: 0 },
  'store show': { flags: ['store'], arguments: 0 },
  'store set': { flags: ['store', 'force', ...storeSettingFlags, ...botCheckFlags], arguments: 0 },
  'store hosts add': { flags: ['store'], arguments: 1 },
  'store hosts remove': { flags: ['store', 'force'], arguments: 1 },
  'store providers add': {
    flags: [
      'store',
      'id',
      'preset',
      'issuer',
      'client-id',
      'client-secret',
      'client-secret-file',
      'private-key',
      'key-id',
      'team-id',
      'name',
      'scopes',
    ],
    arguments: 0,
  },
  'store providers remove': { flags: ['store', 'id'], arguments: 0 },
  'store providers list': { flags: ['store'], arguments: 0 },
  'store delete': { flags: ['store', 'confirm'], arguments: 0 },
  'webhooks add': { flags: ['store', 'url', 'events', 'description'], arguments: 0 },
  'webhooks list': { flags: ['store'], arguments: 0 },
  'webhooks remove': { flags: ['store', 'id'], arguments: 0 },
  'customer show': { flags: ['store'], arguments: 1 },
  'customer delete': { flags: ['store', 'yes'], arguments: 1 },
  'customer sessions': { flags: ['store'], arguments: 1 },
  'customer revoke-sessions': { flags: ['store'], arguments: 1 },
  'customer block': { flags: ['store', 'reason', 'until'], arguments: 1 },
  'customer unblock': { flags: ['store'], arguments: 1 },
  'customer passkeys': { flags: ['store'], arguments: 1 },
  'customer remove-passkey': { flags: ['store'], arguments: 2 },
  'customers import': { flags: ['store', 'dry-run'], arguments: 1 },
  'customers export': { flags: ['store'], arguments: 1 },
  'outbox list': { flags: ['store', 'status'], arguments: 0 },
  'outbox retry': { flags: ['store'], arguments: 1 },
  audit: { flags: ['store', 'customer', 'event', 'limit'], arguments: 0 },
};

/** A flag the command does not take is refused rather than ignored: `prune --store S` must not prune every store. */
function refuseOtherFlags(key: string, flags: Flags, allowed: readonly Flag[]): void {
  for (const flag of Object.keys(flags) as Flag[]) {
    if (flag === 'help' || allowed.includes(flag)) continue;
    if (flag === 'store' && key === 'prune')
      throw new UsageError('prune works on every store at once: it takes no --store');
    if (flag === 'store' && key === 'store create')
      throw new UsageError('store create names the new store with --slug, not --store');
    if (flag === 'store') throw new UsageError(`${key} is about the whole deployment: it takes no --store`);
    throw new UsageError(`${key} takes no --${flag}`);
  }
}

export function parseCommand(
  argv: string[],
): AdminCommand | ImportCommand | BackupCommand | BreachedLoadCommand | CustomersCommand | 'serve' | 'help' {
  const { values, positionals } = readArguments(argv);
  const [noun, verb, ...rest] = positionals;
  if (values.help === true || noun === 'help') return 'help';
  if (noun === undefined) throw new UsageError('no command given');
  if (noun === 'import') {
    if (verb === undefined)
      throw new UsageError('import needs the folder to read (DATA_DIR/pgdata of the earlier version)');
    if (rest[0] !== undefined) throw new UsageError(`unexpected argument "${rest[0]}"`);
    refuseOtherFlags('import', values, []);
    return { name: 'import', folder: verb };
  }
  if (noun === 'breached') {
    if (verb !== 'load') throw new UsageError('breached needs load, and the file to read');
    const [file, unexpected] = rest;
    if (file === undefined) throw new UsageError('breached load needs the file to read (HEX40:COUNT lines)');
    if (unexpected !== undefined) throw new UsageError(`unexpected argument "${unexpected}"`);
    refuseOtherFlags('breached load', values, []);
    return { name: 'breached.load', file };
  }
  if (noun === 'backup' || noun === 'restore') {
    if (verb === undefined)
      throw new UsageError(`${noun} needs the backup file to ${noun === 'backup' ? 'write' : 'read'}`);
    if (rest[0] !== undefined) throw new UsageError(`unexpected argument "${rest[0]}"`);
    refuseOtherFlags(noun, values, noun === 'restore' ? ['force'] : []);
    return noun === 'backup' ? { name: noun, file: verb } : { name: noun, file: verb, force: values.force === true };
  }
  // `store hosts add|remove <host>` and `store providers add|remove|list` have three words; every
  // other command one or two.
  const threeWords = noun === 'store' && (verb === 'hosts' || verb === 'providers');
  if (verb === 'hosts' && rest[0] !== 'add' && rest[0] !== 'remove')
    throw new UsageError('store hosts needs add or remove, and a host');
  if (threeWords && verb === 'providers' && !['add', 'remove', 'list'].includes(rest[0] ?? ''))
    throw new UsageError('store providers needs add, remove or list');
  if (noun === 'webhooks' && !['add', 'list', 'remove'].includes(verb ?? ''))
    throw new UsageError('webhooks needs add, list or remove');
  const key = threeWords ? `store ${verb} ${rest[0]}` : verb === undefined ? noun : `${noun} ${verb}`;
  const args = threeWords ? rest.slice(1) : rest;
  const shape = commands[key];
  if (shape === undefined) throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  const unexpected = args[shape.arguments];
  if (unexpected !== undefined) throw new UsageError(`unexpected argument "${unexpected}"`);
  refuseOtherFlags(key, values, shape.flags);
  const [argument, second] = args;
  const store = storeFlag(values.store);
  if (key === 'customers import' || key === 'customers export') return customersCommand(key, values, argument, store);
  const command = parseKnown(key, values, argument, second);
  if (command === 'serve' || store === undefined) return command;
  // refuseOtherFlags let --store through to the commands about one store only.
  return { ...(command as StoreCommand), store };
}

function parseKnown(
  key: string,
  values: Flags,
  argument: string | undefined,
  second: string | undefined,
): AdminCommand | 'serve' {
  switch (key) {
    case 'serve':
      return 'serve';
    case 'migrate':
      return { name: 'migrate' };
    case 'prune':
      return { name: 'prune' };
    case 'store list':
      return { name: 'store.list' };
    case 'store create':
      return storeCreateCommand(values);
    case 'store show':
      return { name: 'store.show' };
    case 'store set':
      return storeSetCommand(values);
    case 'store hosts add':
    case 'store hosts remove': {
      if (argument === undefined) throw new UsageError(`${key} needs a host`);
      const host = flagValue(key, storeHost, argument);
      return key === 'store hosts add'
        ? { name: 'store.hosts.add', host }
        : { name: 'store.hosts.remove', host, force: values.force === true };
    }
    case 'store providers add':
      return providerAddCommand(values);
    case 'store providers remove':
      if (values.id === undefined) throw new UsageError('store providers remove needs --id, the provider to remove');
      return { name: 'store.providers.remove', id: values.id };
    case 'store providers list':
      return { name: 'store.providers.list' };
    case 'webhooks add':
      return webhookAddCommand(values);
    case 'webhooks list':
      return { name: 'webhooks.list' };
    case 'webhooks remove':
      if (values.id === undefined) throw new UsageError('webhooks remove needs --id, the endpoint to remove');
      return { name: 'webhooks.remove', id: values.id };
    case 'store delete': {
      if (values.store === undefined || values.confirm === undefined)
        throw new UsageError(
          'store delete needs --store <slug> and --confirm <the same slug>: it deletes the store and everything it holds',
        );
      return { name: 'store.delete', confirm: values.confirm };
    }
    case 'customer show':
    case 'customer delete':
    case 'customer sessions':
    case 'customer revoke-sessions':
    case 'customer passkeys':
    case 'customer remove-passkey':
      return customerCommand(key, argument, second, values.yes === true);
    case 'customer block':
      return blockCommand(argument, values);
    case 'customer unblock':
      if (argument === undefined) throw new UsageError('customer unblock needs an identity');
      return { name: 'customer.unblock', identity: argument };
    case 'outbox list': {
      const status = choice<OutboxStatus>('--status', values.status, outboxStatuses);
      return status === undefined ? { name: 'outbox.list' } : { name: 'outbox.list', status };
    }
    case 'outbox retry':
      if (argument === undefined) throw new UsageError('outbox retry needs a message id');
      return { name: 'outbox.retry', id: argument };
    case 'audit':
      return auditCommand(values);
    default:
      throw new UsageError(`unknown command "${key}"`);
  }
}

function customersCommand(
  key: 'customers import' | 'customers export',
  values: Flags,
  file: string | undefined,
  store: string | undefined,
): CustomersCommand {
  const named = store === undefined ? {} : { store };
  if (key === 'customers export')
    return { name: 'customers.export', ...named, ...(file === undefined ? {} : { file }) };
  if (file === undefined) throw new UsageError('customers import needs the NDJSON file to read');
  return { name: 'customers.import', ...named, file, dryRun: values['dry-run'] === true };
}

function storeFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') throw new UsageError('--store needs a store slug (or id)');
  return trimmed;
}

/** A value checked by the store's field rules (store/fields.ts), its refusal worded after the flag. */
function flagValue<I, T>(flag: string, check: (input: I) => T, input: I): T {
  try {
    return check(input);
  } catch (error) {
    if (error instanceof FieldError) throw new UsageError(`${flag} ${error.message}`);
    throw error;
  }
}

function storeSettings(values: Flags): StoreChanges {
  const changes: StoreChanges = {};
  if (values.name !== undefined) changes.name = flagValue('--name', storeName, values.name);
  const mode = choice('--identity-mode', values['identity-mode'], ['email', 'phone'] as const);
  if (mode !== undefined) changes.identityMode = mode;
  const required = choice('--verification-required', values['verification-required'], ['true', 'false'] as const);
  if (required !== undefined) changes.verificationRequired = required === 'true';
  const withCode = choice('--sign-in-with-code', values['sign-in-with-code'], ['true', 'false'] as const);
  if (withCode !== undefined) changes.signInWithCode = withCode === 'true';
  const notices = choice('--sign-in-notices', values['sign-in-notices'], ['true', 'false'] as const);
  if (notices !== undefined) changes.signInNotices = notices === 'true';
  const passkeys = choice('--passkeys', values.passkeys, ['true', 'false'] as const);
  if (passkeys !== undefined) changes.passkeys = passkeys === 'true';
  const twoFactor = choice('--two-factor', values['two-factor'], twoFactorModes);
  if (twoFactor !== undefined) changes.twoFactor = twoFactor;
  const countries = values['phone-countries'];
  if (countries !== undefined)
    changes.phoneCountries = distinct(
      countries.split(',').filter((country) => country.trim() !== ''),
      (country) => flagValue('--phone-countries', storePhoneCountry, country),
    );
  const status = choice<StoreStatus>('--status', values.status, storeStatuses);
  if (status !== undefined) changes.status = status;
  // An empty value clears: `--allowed-origin ''` leaves only https:// and each host.
  const origins = values['allowed-origin'];
  if (origins !== undefined)
    changes.allowedOrigins = distinct(
      origins.filter((origin) => origin.trim() !== ''),
      (origin) => flagValue('--allowed-origin', storeOrigin, origin),
    );
  const brandingPart = (
    flag: 'logo-url' | 'primary-colour' | 'accent-colour' | 'support-url',
    rule: (input: string) => string,
  ) => {
    const value = values[flag];
    return value === undefined ? undefined : value.trim() === '' ? null : flagValue(`--${flag}`, rule, value);
  };
  const branding = Object.fromEntries(
    Object.entries({
      logoUrl: brandingPart('logo-url', storeBrandingUrl),
      primaryColour: brandingPart('primary-colour', storePrimaryColour),
      accentColour: brandingPart('accent-colour', storeAccentColour),
      supportUrl: brandingPart('support-url', storeBrandingUrl),
    }).filter(([, value]) => value !== undefined),
  );
  if (Object.keys(branding).length > 0) changes.branding = branding;
  const mailFrom = values['mail-from'];
  if (mailFrom !== undefined)
    changes.mailFrom = mailFrom.trim() === '' ? null : flagValue('--mail-from', storeMailFrom, mailFrom);
  const smsSender = values['sms-sender'];
  if (smsSender !== undefined)
    changes.smsSender = smsSender.trim() === '' ? null : flagValue('--sms-sender', storeSmsSender, smsSender);
  const rpId = values['webauthn-rp-id'];
  if (rpId !== undefined)
    changes.webauthnRpId = rpId.trim() === '' ? null : flagValue('--webauthn-rp-id', storeHost, rpId);
  const cookieDomain = values['cookie-domain'];
  if (cookieDomain !== undefined)
    changes.cookieDomain =
      cookieDomain.trim() === '' ? null : flagValue('--cookie-domain', storeCookieDomain, cookieDomain);
  const languages = values.languages;
  const defaultLanguage = values['default-language'];
  if (languages !== undefined || defaultLanguage !== undefined) {
    // `en,ar`, spaces forgiven; an empty list is refused by the rule, in its words.
    const tags = languages
      ?.split(',')
      .map((tag) => tag.trim())
      .filter((tag) => tag !== '');
    const change = {
      ...(tags !== undefined && { languages: flagValue('--languages', storeLanguages, tags) }),
      ...(defaultLanguage !== undefined && {
        defaultLanguage: flagValue('--default-language', storeLanguage, defaultLanguage),
      }),
    };
    changes.languages = flagValue('--default-language', storeLanguageChange, change);
  }
  return changes;
}

function storeCreateCommand(values: Flags): AdminCommand {
  const slug = values.slug;
  if (slug === undefined || values.name === undefined)
    throw new UsageError('store create needs --slug (3 to 63 of a-z, 0-9 and -) and --name');
  flagValue('--slug', storeSlug, slug);
  const settings = storeSettings(values);
  const hosts = distinct(values.host ?? [], (host) => flagValue('--host', storeHost, host));
  const languages = settings.languages && flagValue('--default-language', newStoreLanguages, settings.languages);
  const store: NewStore = {
    ...settings,
    ...(languages && { languages }),
    slug,
    name: settings.name!,
    identityMode: settings.identityMode ?? 'email',
    hosts,
  };
  return { name: 'store.create', store };
}

function storeSetCommand(values: Flags): AdminCommand {
  const changes = storeSettings(values);
  const botCheck = botCheckOf(values);
  if (Object.keys(changes).length === 0 && botCheck === undefined)
    throw new UsageError(
      `store set needs at least one of ${storeSettingFlags.map((flag) => `--${flag}`).join(', ')}, --bot-check`,
    );
  return { name: 'store.set', changes, force: values.force === true, ...(botCheck !== undefined && { botCheck }) };
}

/** `--bot-check` and its parts; the secret's file is read when the command runs, as a provider's. */
function botCheckOf(values: Flags): BotCheckCommand | null | undefined {
  const provider = choice('--bot-check', values['bot-check'], ['off', ...botCheckProviders] as const);
  const parts = botCheckFlags.slice(1).filter((flag) => values[flag] !== undefined);
  if (provider === undefined) {
    if (parts.length > 0) throw new UsageError(`--${parts[0]} needs --bot-check`);
    return undefined;
  }
  if (provider === 'off') {
    if (parts.length > 0) throw new UsageError(`--bot-check off takes no --${parts[0]}`);
    return null;
  }
  const siteKey = values['bot-check-site-key'];
  const secretFile = values['bot-check-secret-file'];
  const on = values['bot-check-on'];
  if (siteKey === undefined || secretFile === undefined || on === undefined)
    throw new UsageError('--bot-check needs --bot-check-site-key, --bot-check-secret-file and --bot-check-on');
  const operations = on
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
    .map((name) => choice('--bot-check-on', name, botCheckOperations)!);
  const verifyUrl = values['bot-check-verify-url'];
  return {
    provider,
    site_key: siteKey,
    on: operations,
    secretFile,
    ...(verifyUrl !== undefined && { verify_url: verifyUrl }),
  };
}

/** The provider's fields by the admin API's names; the key file is read when the command runs. */
function providerAddCommand(values: Flags): AdminCommand {
  if (values.id === undefined || values['client-id'] === undefined)
    throw new UsageError('store providers add needs --id, --client-id, and --preset or --issuer');
  if (values.preset === undefined && values.issuer === undefined)
    throw new UsageError('store providers add needs --preset google|apple|microsoft or --issuer URL');
  const given = {
    id: values.id,
    preset: values.preset,
    issuer: values.issuer,
    client_id: values['client-id'],
    client_secret: values['client-secret'],
    key_id: values['key-id'],
    team_id: values['team-id'],
    name: values.name,
    scopes: values.scopes,
  };
  const provider = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
  const keyFile = values['private-key'];
  const secretFile = values['client-secret-file'];
  return {
    name: 'store.providers.add',
    provider,
    ...(keyFile !== undefined && { privateKeyFile: keyFile }),
    ...(secretFile !== undefined && { clientSecretFile: secretFile }),
  };
}

/**
 * The endpoint to add. The admin API's schema limits are checked here; the URL's rules (scheme,
 * private addresses) and the event names when the command runs, as the API checks them.
 */
function webhookAddCommand(values: Flags): AdminCommand {
  const { url, events, description } = values;
  if (url === undefined || events === undefined)
    throw new UsageError('webhooks add needs --url and --events (event types separated by commas, or *)');
  const limits = NewWebhookBody.properties;
  const tooLong = (text: string, max: number | undefined) => max !== undefined && text.length > max;
  if (tooLong(url, limits.url.maxLength))
    throw new UsageError(`--url must be at most ${limits.url.maxLength} characters`);
  if (description !== undefined && tooLong(description, limits.description.maxLength))
    throw new UsageError(`--description must be at most ${limits.description.maxLength} characters`);
  // `a,b`, spaces forgiven; an empty list is refused when the command runs, in the API's words.
  const types = events
    .split(',')
    .map((type) => type.trim())
    .filter((type) => type !== '');
  const maxItems = limits.events.maxItems;
  if (maxItems !== undefined && types.length > maxItems)
    throw new UsageError(`--events names at most ${maxItems} event types`);
  return { name: 'webhooks.add', url, events: types, ...(description !== undefined && { description }) };
}

function customerCommand(
  key: `customer ${'show' | 'delete' | 'sessions' | 'revoke-sessions' | 'passkeys' | 'remove-passkey'}`,
  identity: string | undefined,
  id: string | undefined,
  yes: boolean,
): AdminCommand {
  if (key === 'customer remove-passkey') {
    if (identity === undefined || id === undefined)
      throw new UsageError('customer remove-passkey needs an identity and a passkey id');
    return { name: 'customer.remove-passkey', identity, id };
  }
  if (identity === undefined) throw new UsageError(`${key} needs an identity`);
  if (key === 'customer delete' && !yes)
    throw new UsageError('customer delete erases the account, its sessions and codes for good; add --yes to confirm');
  const names = {
    'customer show': 'customer.show',
    'customer delete': 'customer.delete',
    'customer sessions': 'customer.sessions',
    'customer revoke-sessions': 'customer.revoke-sessions',
    'customer passkeys': 'customer.passkeys',
  } as const;
  return { name: names[key], identity };
}

function blockCommand(identity: string | undefined, values: Flags): AdminCommand {
  if (identity === undefined) throw new UsageError('customer block needs an identity');
  const reason = values.reason?.trim();
  if (reason === undefined || reason === '' || reason.length > 500)
    throw new UsageError('customer block needs --reason, 1 to 500 characters: why, for the audit trail');
  if (values.until === undefined) return { name: 'customer.block', identity, reason, until: null };
  const until = new Date(values.until);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(values.until) || Number.isNaN(until.getTime()))
    throw new UsageError('--until must be an ISO 8601 date and time, e.g. 2030-01-31T12:00:00Z');
  return { name: 'customer.block', identity, reason, until };
}

function auditCommand(values: Flags): AdminCommand {
  const event = choice<AuditEvent>('--event', values.event, auditEvents);
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      throw new UsageError('--limit must be a whole number from 1 to 10000');
  }
  return {
    name: 'audit.list',
    ...(values.customer === undefined ? {} : { identity: values.customer }),
    ...(event === undefined ? {} : { event }),
    ...(limit === undefined ? {} : { limit }),
  };
}
