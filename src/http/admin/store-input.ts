import type { FastifyRequest } from 'fastify';
import { deliveryProblem, type IdentityMode } from '../../config.js';
import {
  cookieDomainRefusal,
  defaultLanguageRefusal,
  distinct,
  FieldError,
  newStoreLanguages,
  sealBotCheck,
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
} from '../../store/fields.js';
import type { Failure } from '../../auth/result.js';
import type { RefusalFacts, StoreRefusal } from '../../platform/stores.js';
import { storeSlugPattern, type NewStore, type StoreChanges } from '../../store/store.js';
import type { Edge } from '../core/edge.js';
import { ProblemError, type FieldMessage } from '../core/problems.js';
import { validationErrors } from '../core/validation.js';
import { storeNotFound } from './admin-kit.js';
import type { CreateStoreBody, StorePatch } from './store-schemas.js';

/** A store's fields as the admin API takes them: checked by the store's rules, refused all at once. */

type Deps = Pick<Edge, 'config' | 'keys'>;

/**
 * Each field's refusals, all in one answer, as the customer API names every failing field: those
 * of the body's schema (the route attaches them instead of answering) and of the field rules.
 */
export class FieldChecker {
  readonly errors: Record<string, FieldMessage[]> = {};

  /** Starts from the body's schema errors; any other failed check (the path, the query) is answered at once. */
  static of(request: FastifyRequest): FieldChecker {
    const fields = new FieldChecker();
    const failed = request.validationError;
    if (failed === undefined) return fields;
    const schemaErrors = 'validation' in failed ? validationErrors(failed.validation) : {};
    // A body that is not an object at all has no fields to check further.
    if (failed.validationContext !== 'body' || 'body' in schemaErrors) throw failed;
    Object.assign(fields.errors, schemaErrors);
    return fields;
  }

  /** A field its schema refused is not checked again: its value is not of the type the rule takes. */
  check<T>(field: string, value: T | undefined, rule: (value: T) => unknown): void {
    if (value === undefined || field in this.errors) return;
    try {
      rule(value);
    } catch (error) {
      if (!(error instanceof FieldError)) throw error;
      (this.errors[field] ??= []).push(error.message);
    }
  }

  /** The value by its rule, or undefined when the rule refused it (already noted). */
  value<T, R>(field: string, value: T, rule: (value: T) => R): R | undefined {
    let result: R | undefined;
    this.check(field, value, (input: T) => (result = rule(input)));
    return result;
  }

  /** A refusal found outside the field rules. */
  note(field: string, message: string): void {
    (this.errors[field] ??= []).push(message);
  }

  throwIfAny(): void {
    if (Object.keys(this.errors).length > 0) throw new ProblemError('validation_failed', { errors: this.errors });
  }
}

/** A patch's or a new store's fields in the store's terms, every value checked by the store's field rules. */
export function storeChangesOf(body: StorePatch, fields: FieldChecker, keys: Deps['keys']): StoreChanges {
  const changes: StoreChanges = {};
  const set = <K extends keyof StoreChanges>(key: K, value: StoreChanges[K] | undefined) => {
    if (value !== undefined) changes[key] = value;
  };
  if (body.name !== undefined) set('name', fields.value('name', body.name, storeName));
  set('status', body.status);
  set('identityMode', body.identity_mode);
  const settings = body.settings ?? {};
  set('verificationRequired', settings['auth.customer_verification_required']);
  set('signInWithCode', settings['auth.sign_in_with_code']);
  set('signInNotices', settings['auth.sign_in_notices']);
  set('passkeys', settings['auth.passkeys']);
  set('twoFactor', settings['auth.two_factor']);
  const countries = settings['auth.phone_countries'];
  if (countries !== undefined)
    set(
      'phoneCountries',
      fields.value('settings', countries, (list) => distinct(list, storePhoneCountry)),
    );
  const botCheck = settings['auth.bot_check'];
  if (botCheck !== undefined)
    set(
      'botCheck',
      botCheck === null ? null : fields.value('settings', botCheck, (input) => sealBotCheck(input, keys.hooks)),
    );
  const branding = body.branding ?? {};
  const part = <R>(field: keyof typeof branding, rule: (input: string) => R) => {
    const value = branding[field];
    return value === undefined ? undefined : value === null ? null : fields.value(`branding.${field}`, value, rule);
  };
  const brandingChange = {
    logoUrl: part('logo_url', storeBrandingUrl),
    primaryColour: part('primary_colour', storePrimaryColour),
    accentColour: part('accent_colour', storeAccentColour),
    supportUrl: part('support_url', storeBrandingUrl),
  };
  const givenParts = Object.entries(brandingChange).filter(([, value]) => value !== undefined);
  if (givenParts.length > 0) set('branding', Object.fromEntries(givenParts));
  if (body.allowed_origins !== undefined)
    set(
      'allowedOrigins',
      fields.value('allowed_origins', body.allowed_origins ?? [], (origins) => distinct(origins, storeOrigin)),
    );
  const optional = <R>(field: string, value: string | null | undefined, rule: (input: string) => R) =>
    value === undefined ? undefined : value === null ? null : fields.value(field, value, rule);
  set('mailFrom', optional('mail_from', body.mail_from, storeMailFrom));
  set('smsSender', optional('sms_sender', body.sms_sender, storeSmsSender));
  set('webauthnRpId', optional('webauthn_rp_id', body.webauthn_rp_id, storeHost));
  set('cookieDomain', optional('cookie_domain', body.cookie_domain, storeCookieDomain));
  if (body.languages !== undefined || body.default_language !== undefined) {
    const languages = body.languages && fields.value('languages', body.languages, storeLanguages);
    const defaultLanguage =
      body.default_language && fields.value('default_language', body.default_language, storeLanguage);
    // A refused half is not applied alone: the other one would be checked against what was not meant.
    if (!('languages' in fields.errors || 'default_language' in fields.errors)) {
      const change = { ...(languages && { languages }), ...(defaultLanguage && { defaultLanguage }) };
      set('languages', fields.value('default_language', change, storeLanguageChange));
    }
  }
  return changes;
}

export function newStoreOf(
  body: CreateStoreBody,
  fields: FieldChecker,
  config: Deps['config'],
  keys: Deps['keys'],
): NewStore {
  fields.check('slug', body.slug, storeSlug);
  const hosts = fields.value('hosts', body.hosts ?? [], (hosts) => distinct(hosts, storeHost)) ?? [];
  const changes = storeChangesOf(body, fields, keys);
  const languages = changes.languages && fields.value('default_language', changes.languages, newStoreLanguages);
  const identityMode = body.identity_mode ?? 'email';
  checkTransport(fields, config, identityMode);
  fields.throwIfAny();
  return { ...changes, ...(languages && { languages }), slug: body.slug, name: changes.name!, identityMode, hosts };
}

/** In production, an identity mode the deployment has no transport for is refused. */
export function checkTransport(fields: FieldChecker, config: Deps['config'], mode: IdentityMode | undefined): void {
  const problem = mode === undefined ? undefined : deliveryProblem(config, mode);
  if (problem !== undefined)
    fields.note('identity_mode', `The deployment cannot send by ${mode}: ${problem.variable} ${problem.reason}.`);
}

export function hostOf(input: string): string {
  const fields = new FieldChecker();
  const host = fields.value('host', input, storeHost);
  fields.throwIfAny();
  return host!;
}

export const cursorOf = (slug: string) => Buffer.from(slug).toString('base64url');

export function slugAfter(cursor: string | undefined): string {
  if (cursor === undefined) return '';
  const slug = Buffer.from(cursor, 'base64url').toString();
  if (!storeSlugPattern.test(slug))
    throw new ProblemError('validation_failed', { errors: { cursor: ["Is not a page's next_cursor."] } });
  return slug;
}

/** What the call asked for, where a refusal's answer names it. */
interface Asked {
  cookieDomain?: string | null | undefined;
  languages?: StoreChanges['languages'];
  hosts?: readonly string[] | undefined;
}

/** A platform refusal as the admin API answers it: every kind mapped, or this does not compile. */
export function storeRefusal(refusal: Failure<StoreRefusal, RefusalFacts>, asked: Asked = {}): ProblemError {
  switch (refusal.error) {
    case 'no_transport': {
      const { variable, reason } = refusal.transport!;
      const detail = `The deployment cannot send by this identity mode: ${variable} ${reason}.`;
      return new ProblemError('validation_failed', { errors: { identity_mode: [detail] } });
    }
    case 'slug_taken':
    case 'identity_mode_in_use':
    case 'idempotency_key_reused':
      return new ProblemError(refusal.error);
    case 'host_taken':
      return new ProblemError(
        'host_taken',
        {},
        {},
        `Another store answers on ${refusal.taken!.host}; remove it there first.`,
      );
    case 'host_under_cookie_domain':
      return new ProblemError(
        'cookie_domain_shared',
        {},
        {},
        `${refusal.host} is under another store's cookie domain: it would receive that store's cookies.`,
      );
    case 'cookie_domain_off_hosts':
    case 'cookie_domain_shared': {
      // One covering another store's host is a conflict with that store; one covering none of the store's own is a wrong value.
      const cookieRefusal = { ok: false as const, reason: refusal.error, host: refusal.host! };
      const message = cookieDomainRefusal(asked.cookieDomain!, cookieRefusal, asked.hosts ?? []);
      return refusal.error === 'cookie_domain_shared'
        ? new ProblemError('cookie_domain_shared', {}, {}, message)
        : new ProblemError('validation_failed', { errors: { cookie_domain: [message] } });
    }
    case 'default_language_not_spoken': {
      const message = defaultLanguageRefusal(refusal.languages!, asked.languages!);
      return new ProblemError('validation_failed', { errors: { default_language: [message] } });
    }
    case 'no_such_host':
      return new ProblemError('not_found', {}, {}, 'The store has no such host.');
    case 'relying_party_in_use':
      return new ProblemError('relying_party_in_use');
    case 'no_store':
      return new ProblemError('store_not_found', {}, {}, storeNotFound);
  }
}
