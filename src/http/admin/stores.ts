import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { countCustomers } from '../../auth/tables/customers.js';
import { countStorePasskeys } from '../../auth/tables/passkeys.js';
import { deliveryProblem, type IdentityMode } from '../../config.js';
import {
  cookieDomainRefusal,
  defaultLanguageRefusal,
  describeStore,
  distinct,
  FieldError,
  newStoreLanguages,
  relyingPartyInUse,
  storeCookieDomain,
  storeHost,
  storeLanguage,
  storeLanguageChange,
  storeLanguages,
  storeMailFrom,
  storeName,
  storeBrandingUrl,
  storeChangeDetails,
  storeAccentColour,
  storeOrigin,
  storePrimaryColour,
  storeSlug,
  storeSmsSender,
  storePhoneCountry,
  strandedPasskeysWarning,
  sealBotCheck,
} from '../../store/fields.js';
import { requestHash, runOnce } from '../../store/idempotency.js';
import {
  addStoreHost,
  createStore,
  insertStore,
  listStores,
  markStoreDeleted,
  onlyStore,
  removeStoreHost,
  storeSlugPattern,
  updateStore,
  type CookieDomainRefusal,
  type NewStore,
  type StoreChanges,
  type StoreContext,
  type StoreCreateResult,
} from '../../store/store.js';
import type { Edge } from '../edge.js';
import { ProblemError, type FieldMessage } from '../problems.js';
import { validationErrors } from '../validation.js';
import {
  ChangedStore,
  CreatedStore,
  CreateStoreBody,
  DeletedStore,
  HostBody,
  Store,
  StoreList,
  StorePatch,
} from './store-schemas.js';
import { adminCallerOf } from './tokens.js';
import {
  adminStoreKit,
  countAdminCalls,
  IdempotencyHeaders,
  pageSize,
  route,
  StoreParams,
  storeNotFound,
  storeProblems,
  withBody,
} from './admin-kit.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'config' | 'keys' | 'store' | 'limiter' | 'audit' | 'janitor' | 'webhooks'>;

const HostParams = Type.Composite([StoreParams, Type.Object({ host: Type.String({ minLength: 1, maxLength: 253 }) })]);
const ListQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ maxLength: 200, description: "A page's `next_cursor`." })),
    limit: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,3}$', description: 'Stores per page, 1 to 500 (default 100).' }),
    ),
  },
  { additionalProperties: false },
);
const HostRemovalQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: "Remove the host even when it is the last on the relying party ID of the store's passkeys.",
      }),
    ),
  },
  { additionalProperties: false },
);
const PatchQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: 'Switch `identity_mode` even while customers are registered by the current one.',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * Each field's refusals, all in one answer, as the customer API names every failing field: those
 * of the body's schema (the route attaches them instead of answering) and of the field rules.
 */
class FieldErrors {
  readonly errors: Record<string, FieldMessage[]> = {};

  /** Starts from the body's schema errors; any other failed check (the path, the query) is answered at once. */
  static of(request: FastifyRequest): FieldErrors {
    const fields = new FieldErrors();
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
function storeChangesOf(body: StorePatch, fields: FieldErrors, keys: Deps['keys']): StoreChanges {
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

function newStoreOf(body: CreateStoreBody, fields: FieldErrors, config: Deps['config'], keys: Deps['keys']): NewStore {
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
function checkTransport(fields: FieldErrors, config: Deps['config'], mode: IdentityMode | undefined): void {
  const problem = mode === undefined ? undefined : deliveryProblem(config, mode);
  if (problem !== undefined)
    fields.note('identity_mode', `The deployment cannot send by ${mode}: ${problem.variable} ${problem.reason}.`);
}

function hostOf(input: string): string {
  const fields = new FieldErrors();
  const host = fields.value('host', input, storeHost);
  fields.throwIfAny();
  return host!;
}

const cursorOf = (slug: string) => Buffer.from(slug).toString('base64url');

function slugAfter(cursor: string | undefined): string {
  if (cursor === undefined) return '';
  const slug = Buffer.from(cursor, 'base64url').toString();
  if (!storeSlugPattern.test(slug))
    throw new ProblemError('validation_failed', { errors: { cursor: ["Is not a page's next_cursor."] } });
  return slug;
}

function refusedCreate(result: Exclude<StoreCreateResult, { ok: true }>, store: NewStore): ProblemError {
  if (result.reason === 'slug_taken') return new ProblemError('slug_taken');
  if (result.reason === 'host_taken')
    return new ProblemError('host_taken', {}, {}, `Another store answers on ${result.host}; remove it there first.`);
  if (result.reason === 'host_under_cookie_domain') return hostUnderCookieDomain(result.host);
  return refusedCookieDomain(result, store.cookieDomain!, store.hosts ?? []);
}

function hostUnderCookieDomain(host: string): ProblemError {
  return new ProblemError(
    'cookie_domain_shared',
    {},
    {},
    `${host} is under another store's cookie domain: it would receive that store's cookies.`,
  );
}

/**
 * A cookie domain refused against the hosts: one covering another store's host is a conflict with
 * that store; one covering none of the store's own is a wrong value.
 */
function refusedCookieDomain(refusal: CookieDomainRefusal, domain: string, hosts: readonly string[]): ProblemError {
  const message = cookieDomainRefusal(domain, refusal, hosts);
  return refusal.reason === 'cookie_domain_shared'
    ? new ProblemError('cookie_domain_shared', {}, {}, message)
    : new ProblemError('validation_failed', { errors: { cookie_domain: [message] } });
}

const passkeyCounts = { countPasskeys: countStorePasskeys };

/**
 * The platform's calls about stores, hosts and customers, on the admin listener only: made for a
 * backend that creates a store when a merchant signs up and retries what it is not sure went
 * through. Every change is on the change feed at once, so each instance follows within its next
 * feed read (a second), this one at once.
 */
export function storeRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, config, limiter } = services;

  const { storeNamed, audit, changed } = adminStoreKit(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.post(
      '/stores',
      route(
        'createStore',
        'Create a store',
        "Makes a store, and answers it as `GET /stores/{id}` does. With an `Idempotency-Key`, a retry of the same call within 24 hours answers the first answer again and makes nothing: send one whenever the call may be retried. The only store of a deployment answers on every host while it has none; once a second store exists it answers only on its own hosts, and the answer warns when that changed. Recorded in the new store's audit trail (`store.created`) with the token's id.",
        { headers: IdempotencyHeaders, body: CreateStoreBody },
        [...withBody, 'slug_taken', 'host_taken', 'cookie_domain_shared', 'idempotency_key_reused'],
        { 201: CreatedStore },
        { attachValidation: true },
      ),
      async (request, reply) => {
        const store = newStoreOf(request.body, FieldErrors.of(request), config, services.keys);
        const before = await onlyStore(db);
        const unhosted = before.ok && before.store.hosts.length === 0 ? before.store.slug : undefined;
        const answer = (made: StoreContext) => ({
          status: 201,
          body: {
            ...describeStore(made),
            ...(unhosted !== undefined && {
              warnings: [
                `The store ${unhosted} has no host: it answered on every host as the only store, and now answers on none. Give it one with POST /admin/v1/stores/${unhosted}/hosts.`,
              ],
            }),
          },
        });
        const key = request.headers['idempotency-key'];
        const result =
          key === undefined
            ? await createStore(db, clock, store).then((made) => {
                if (!made.ok) throw refusedCreate(made, store);
                return { ...answer(made.store), replayed: false };
              })
            : await runOnce(db, clock, key, requestHash('POST /stores', request.body), async (tx) => {
                const made = await insertStore(tx, clock, store);
                if (!made.ok) throw refusedCreate(made, store);
                return answer(made.store);
              });
        if ('mismatch' in result) throw new ProblemError('idempotency_key_reused');
        if (result.replayed) {
          reply.header('idempotency-replayed', 'true');
        } else {
          const id = (result.body as { id: string }).id;
          audit(request, id, 'store.created', { slug: store.slug });
          await changed();
        }
        return reply.code(result.status).send(result.body);
      },
    );

    app.get(
      '/stores',
      route(
        'listStores',
        'List stores',
        'Live stores by slug, a page at a time: pass `next_cursor` as `cursor` until it is null. A store created or deleted meanwhile may or may not be on a later page; none is listed twice.',
        { querystring: ListQuery },
        ['validation_failed'],
        { 200: StoreList },
      ),
      async (request) => {
        const size = pageSize(request.query.limit);
        // One more than the page: whether a next page exists, without a count.
        const found = await listStores(db, { afterSlug: slugAfter(request.query.cursor), limit: size + 1 });
        const page = found.slice(0, size);
        return {
          stores: page.map(describeStore),
          next_cursor: found.length > size ? cursorOf(page.at(-1)!.slug) : null,
        };
      },
    );

    app.get(
      '/stores/:id',
      route('getStore', 'Read a store', 'A live store by id or slug.', { params: StoreParams }, storeProblems, {
        200: Store,
      }),
      async (request) => describeStore(await storeNamed(request.params.id)),
    );

    app.patch(
      '/stores/:id',
      route(
        'changeStore',
        'Change a store',
        "A JSON merge patch (RFC 7396; `application/merge-patch+json` or `application/json`) of the store's fields and settings; answers the store as changed. An empty patch changes nothing. Recorded in the store's audit trail (`store.changed`, naming the fields) with the token's id.",
        { params: StoreParams, querystring: PatchQuery, body: StorePatch },
        [...withBody, ...storeProblems, 'identity_mode_in_use', 'cookie_domain_shared'],
        { 200: ChangedStore },
        { attachValidation: true },
      ),
      async (request) => {
        const fields = FieldErrors.of(request);
        const changes = storeChangesOf(request.body, fields, services.keys);
        checkTransport(fields, config, changes.identityMode);
        fields.throwIfAny();
        const store = await storeNamed(request.params.id);
        if (Object.keys(changes).length === 0) return describeStore(store);
        const force = request.query.force === 'true';
        const options = { store: store.id, force, countCustomers, ...passkeyCounts };
        const result = await updateStore(db, clock, changes, options);
        if (!result.ok) {
          if (result.reason === 'identity_mode_in_use') throw new ProblemError('identity_mode_in_use');
          if (result.reason === 'cookie_domain_off_hosts' || result.reason === 'cookie_domain_shared')
            throw refusedCookieDomain(result, changes.cookieDomain!, store.hosts);
          if (result.reason === 'default_language_not_spoken') {
            fields.note('default_language', defaultLanguageRefusal(result.current, changes.languages!));
            fields.throwIfAny();
          }
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        }
        audit(request, store.id, 'store.changed', storeChangeDetails(changes));
        await changed();
        const { strandedPasskeys } = result;
        return {
          ...describeStore(result.store),
          ...(strandedPasskeys > 0 && { warnings: [strandedPasskeysWarning(strandedPasskeys, store.webauthnRpId)] }),
        };
      },
    );

    app.delete(
      '/stores/:id',
      route(
        'deleteStore',
        'Delete a store',
        "At once the store stops answering (its shoppers' next call is `404 store_not_found`) and its slug and hosts are free for another store. Everything it held (customers, sessions, codes, passkeys, messages, audit trail) is then erased in the background, in batches, resuming after a restart. Its audit trail goes with it, so the deletion is in the service's log with the token's id.",
        { params: StoreParams },
        storeProblems,
        { 202: DeletedStore },
      ),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        if (!(await markStoreDeleted(db, clock, store.id)))
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        request.log.info({ store: store.id, slug: store.slug, token: adminCallerOf(request).tokenId }, 'store deleted');
        services.janitor.wake();
        await changed();
        return reply.code(202).send({ id: store.id, slug: store.slug, status: 'deleted' as const });
      },
    );

    app.post(
      '/stores/:id/hosts',
      route(
        'addStoreHost',
        'Add a host to a store',
        "The store answers on the host too, from every instance's next feed read (a second). Point the host's DNS at the deployment before or after. A host the store has already is no change. Recorded as `store.changed` with `host_added`.",
        { params: StoreParams, body: HostBody },
        [...withBody, ...storeProblems, 'host_taken', 'cookie_domain_shared'],
        { 201: Store },
      ),
      async (request, reply) => {
        const host = hostOf(request.body.host);
        const store = await storeNamed(request.params.id);
        const options = { ...passkeyCounts, deploymentRpId: config.webauthn.rpId };
        const result = await addStoreHost(db, clock, store.id, host, options);
        if (!result.ok) {
          if (result.reason === 'host_taken') throw new ProblemError('host_taken');
          if (result.reason === 'host_under_cookie_domain') throw hostUnderCookieDomain(host);
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        }
        audit(request, store.id, 'store.changed', { host_added: host });
        await changed();
        return reply.code(201).send(describeStore(result.store));
      },
    );

    app.delete(
      '/stores/:id/hosts/:host',
      route(
        'removeStoreHost',
        'Remove a host from a store',
        "The store stops answering on the host, and another store may take it. The store's passkeys are bound to its relying party ID: removing the last host on it is `409 relying_party_in_use` while the store has passkeys (`?force=true` removes it anyway, and they stop signing in); without passkeys the relying party ID moves to the first host left. Recorded as `store.changed` with `host_removed`.",
        { params: HostParams, querystring: HostRemovalQuery },
        [...storeProblems, 'not_found', 'validation_failed', 'relying_party_in_use'],
        { 200: Store },
      ),
      async (request) => {
        const host = hostOf(request.params.host);
        const store = await storeNamed(request.params.id);
        const options = { ...passkeyCounts, force: request.query.force === 'true' };
        const result = await removeStoreHost(db, clock, store.id, host, options);
        if (!result.ok) {
          if (result.reason === 'no_such_host')
            throw new ProblemError('not_found', {}, {}, 'The store has no such host.');
          if (result.reason === 'relying_party_in_use')
            throw new ProblemError(
              'relying_party_in_use',
              {},
              {},
              relyingPartyInUse(host, store.webauthnRpId, result.passkeys, '?force=true'),
            );
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        }
        audit(request, store.id, 'store.changed', { host_removed: host });
        await changed();
        return describeStore(result.store);
      },
    );
  };
}
