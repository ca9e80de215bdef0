import {
  distinct,
  newStoreLanguages,
  storeAccentColour,
  storeBrandingUrl,
  storeCookieDomain,
  storeHost,
  storeLanguage,
  storeLanguageChange,
  storeLanguages,
  storeMailFrom,
  storeName,
  storeOrigin,
  storePhoneCountry,
  storePrimaryColour,
  storeSlug,
  storeSmsSender,
} from '../store/fields.js';
import {
  botCheckOperations,
  botCheckProviders,
  storeStatuses,
  twoFactorModes,
  type NewStore,
  type StoreChanges,
  type StoreStatus,
} from '../store/store.js';
import type { AdminCommand } from './commands.js';
import type { BotCheckCommand } from './store-commands.js';
import { choice, flagValue, UsageError, type Flag, type Flags } from './flags.js';

/** `store create` and `store set`: the flags of a store's fields and settings, checked by the store's rules. */

export const botCheckFlags = [
  'bot-check',
  'bot-check-site-key',
  'bot-check-secret-file',
  'bot-check-on',
  'bot-check-verify-url',
] as const satisfies readonly Flag[];

/** What `store set` changes, and `store create` may set from the start. */
export const storeSettingFlags = [
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

export function storeCreateCommand(values: Flags): AdminCommand {
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

export function storeSetCommand(values: Flags): AdminCommand {
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
