import { controlCharacter } from '../i18n/controls.js';
import { createPrivateKey } from 'node:crypto';
import type { Clock } from '../clock.js';
import { acceptedKeys, seal, unseal, type Keys } from '../keys.js';
import { deleteInBatch, type Queryable, type StoreQueryable } from '../storage/database.js';
import type { StoreContext } from '../store/store.js';
import { defaultScopes, presetNames, presets, type PresetName, type ResponseMode } from './presets.js';

/**
 * A store's OpenID Connect providers: this module owns the `store_providers` table, and checks a
 * provider as an operator or the platform's backend gives it (the command line and the admin API
 * take the same fields and refuse the same values with the same words).
 */

/** How the client proves itself at the provider's token endpoint. */
export type ClientSecret =
  | { kind: 'client_secret'; value: string }
  /** Apple's way: a short-lived JWT signed with the team's private key (see apple-secret.ts). */
  | { kind: 'private_key'; privateKey: string; keyId: string; teamId: string };

/** A provider as the relying party uses it, secret included. */
export interface ProviderConfig {
  id: string;
  name: string;
  preset: PresetName | null;
  issuer: string;
  clientId: string;
  secret: ClientSecret;
  scopes: string;
  responseMode: ResponseMode;
  /** Changes with every save: a relying party cached for an older one is stale. */
  updatedAt: string;
}

/** A provider as an operator lists it: no secret. */
export interface ProviderView {
  id: string;
  name: string;
  preset: PresetName | null;
  issuer: string;
  client_id: string;
  secret: ClientSecret['kind'];
  scopes: string;
  response_mode: ResponseMode;
  created_at: string;
  updated_at: string;
}

/** A provider's fields as given (the admin API's names); every one is text. */
export interface ProviderInput {
  id?: string | undefined;
  preset?: string | undefined;
  issuer?: string | undefined;
  client_id?: string | undefined;
  client_secret?: string | undefined;
  private_key?: string | undefined;
  key_id?: string | undefined;
  team_id?: string | undefined;
  name?: string | undefined;
  scopes?: string | undefined;
}

export type ProviderField = keyof ProviderInput;
export type ProviderCheck =
  | { ok: true; provider: Omit<ProviderConfig, 'updatedAt'> }
  | { ok: false; errors: Partial<Record<ProviderField, string[]>> };

const providerIdPattern = /^[a-z0-9][a-z0-9-]{0,31}$/;
const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** An issuer URL: https://, or http:// on a loopback address for local testing; no query or fragment. */
export function issuerProblem(input: string): string | null {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return `${JSON.stringify(input)} is not a URL, such as https://accounts.google.com`;
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '')
    return `${JSON.stringify(input)} must have no query, fragment or credentials`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && loopbackHosts.has(url.hostname)) return null;
  return `${JSON.stringify(input)} must be https:// (http:// only on 127.0.0.1 or localhost, for testing)`;
}

function text(input: string | undefined, max: number): string | null {
  if (input === undefined) return null;
  const value = input.trim();
  return value === '' || [...value].length > max || controlCharacter.test(value) ? null : value;
}

/** Checks a provider's fields; each error names the field, in the admin API's words. */
export function checkProvider(input: ProviderInput): ProviderCheck {
  const errors: Partial<Record<ProviderField, string[]>> = {};
  const refuse = (field: ProviderField, message: string) => (errors[field] ??= []).push(message);

  const id = input.id ?? '';
  if (!providerIdPattern.test(id) || id === 'linked')
    refuse(
      'id',
      `${JSON.stringify(id)} must be 1 to 32 of a-z, 0-9 and -, starting with a letter or digit (not "linked")`,
    );
  let preset = null as PresetName | null;
  if (input.preset !== undefined) {
    if ((presetNames as readonly string[]).includes(input.preset)) preset = input.preset as PresetName;
    else refuse('preset', `${JSON.stringify(input.preset)} must be one of ${presetNames.join(', ')}`);
  }
  const issuer = input.issuer?.trim() ?? (preset === null ? undefined : presets[preset].issuer);
  if (issuer === undefined) {
    if (input.preset === undefined) refuse('issuer', 'give an issuer URL, or a preset');
  } else {
    const problem = issuerProblem(issuer);
    if (problem !== null) refuse('issuer', problem);
  }
  const clientId = text(input.client_id, 512);
  if (clientId === null) refuse('client_id', 'must be 1 to 512 characters, without control characters');

  let secret: ClientSecret | null = null;
  if (input.client_secret !== undefined && input.private_key !== undefined) {
    refuse('client_secret', 'give a client secret or a private key, not both');
  } else if (input.private_key !== undefined) {
    const keyId = text(input.key_id, 64);
    const teamId = text(input.team_id, 64);
    if (keyId === null) refuse('key_id', 'the private key needs its key id (1 to 64 characters)');
    if (teamId === null) refuse('team_id', 'the private key needs the team id (1 to 64 characters)');
    if (!isP256PrivateKey(input.private_key))
      refuse('private_key', 'must be a PEM private key on the P-256 curve (a .p8 file)');
    else if (keyId !== null && teamId !== null)
      secret = { kind: 'private_key', privateKey: input.private_key, keyId, teamId };
  } else {
    const value = input.client_secret === undefined || input.client_secret.length > 4096 ? null : input.client_secret;
    if (value === null || value.trim() === '')
      refuse(
        'client_secret',
        'give the client secret (1 to 4096 characters), or a private key with its key and team ids',
      );
    else secret = { kind: 'client_secret', value };
  }

  const name = input.name === undefined ? (preset === null ? id : presets[preset].name) : text(input.name, 64);
  if (name === null) refuse('name', 'must be 1 to 64 characters, without control characters');
  const scopes =
    input.scopes === undefined ? (preset === null ? defaultScopes : presets[preset].scopes) : input.scopes.trim();
  if (!/^[\x21-\x7e]+( [\x21-\x7e]+)*$/.test(scopes) || !scopes.split(' ').includes('openid'))
    refuse('scopes', `${JSON.stringify(scopes)} must be space-separated scopes that include openid`);

  if (Object.keys(errors).length > 0 || issuer === undefined || clientId === null || secret === null || name === null)
    return { ok: false, errors };
  return {
    ok: true,
    provider: {
      id,
      name,
      preset,
      issuer,
      clientId,
      secret,
      scopes,
      responseMode: preset === null ? 'query' : presets[preset].responseMode,
    },
  };
}

function isP256PrivateKey(pem: string): boolean {
  try {
    const key = createPrivateKey(pem);
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  } catch {
    return false;
  }
}

interface ProviderRow {
  id: string;
  name: string;
  preset: PresetName | null;
  issuer: string;
  client_id: string;
  sealed_secret: string;
  key_id: string | null;
  team_id: string | null;
  scopes: string;
  response_mode: ResponseMode;
  created_at: Date;
  updated_at: Date;
}

const providerColumns =
  'id, name, preset, issuer, client_id, sealed_secret, key_id, team_id, scopes, response_mode, created_at, updated_at';

/** Adds a provider to the store, or replaces the one of the same id (a new secret, say). */
export async function saveProvider(
  db: StoreQueryable,
  clock: Clock,
  keys: Pick<Keys, 'providers'>,
  provider: Omit<ProviderConfig, 'updatedAt'>,
): Promise<{ outcome: 'added' | 'replaced'; provider: ProviderView }> {
  const { secret } = provider;
  const sealed = seal(keys.providers, secret.kind === 'client_secret' ? secret.value : secret.privateKey);
  const [row] = await db.query<ProviderRow & { added: boolean }>(
    `INSERT INTO store_providers (store_id, id, name, preset, issuer, client_id, sealed_secret, key_id, team_id, scopes,
                                  response_mode, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
     ON CONFLICT (store_id, id) DO UPDATE SET name = EXCLUDED.name, preset = EXCLUDED.preset, issuer = EXCLUDED.issuer,
       client_id = EXCLUDED.client_id, sealed_secret = EXCLUDED.sealed_secret, key_id = EXCLUDED.key_id,
       team_id = EXCLUDED.team_id, scopes = EXCLUDED.scopes, response_mode = EXCLUDED.response_mode,
       updated_at = EXCLUDED.updated_at
     RETURNING ${providerColumns}, xmax = 0 AS added`,
    [
      db.storeId,
      provider.id,
      provider.name,
      provider.preset,
      provider.issuer,
      provider.clientId,
      sealed,
      secret.kind === 'private_key' ? secret.keyId : null,
      secret.kind === 'private_key' ? secret.teamId : null,
      provider.scopes,
      provider.responseMode,
      clock.now(),
    ],
  );
  return { outcome: row!.added ? 'added' : 'replaced', provider: toView(row!) };
}

export async function removeProvider(db: StoreQueryable, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM store_providers WHERE store_id = $1 AND id = $2 RETURNING 1', [
    db.storeId,
    id,
  ]);
  return rows.length > 0;
}

export type AddProviderResult =
  | { ok: true; outcome: 'added' | 'replaced'; provider: ProviderView }
  | { ok: false; reason: 'invalid'; errors: Partial<Record<ProviderField, string[]>> }
  | { ok: false; reason: 'phone_store' };

/**
 * Adds a provider to a store, or replaces the one of the same id: what `store providers add` and
 * the admin API do. Providers sign in by a verified email, so a store of phone numbers has none.
 */
export async function addStoreProvider(
  db: StoreQueryable,
  clock: Clock,
  keys: Pick<Keys, 'providers'>,
  store: Pick<StoreContext, 'identityMode'>,
  input: ProviderInput,
): Promise<AddProviderResult> {
  if (store.identityMode !== 'email') return { ok: false, reason: 'phone_store' };
  const checked = checkProvider(input);
  if (!checked.ok) return { ok: false, reason: 'invalid', errors: checked.errors };
  return { ok: true, ...(await saveProvider(db, clock, keys, checked.provider)) };
}

function toView(row: ProviderRow): ProviderView {
  return {
    id: row.id,
    name: row.name,
    preset: row.preset,
    issuer: row.issuer,
    client_id: row.client_id,
    secret: row.key_id === null ? 'client_secret' : 'private_key',
    scopes: row.scopes,
    response_mode: row.response_mode,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** The store's providers in id order, without their secrets. */
export async function listProviders(db: StoreQueryable): Promise<ProviderView[]> {
  const rows = await db.query<ProviderRow>(
    `SELECT ${providerColumns} FROM store_providers WHERE store_id = $1 ORDER BY id`,
    [db.storeId],
  );
  return rows.map(toView);
}

/** A provider sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS. */
export class ProviderSecretUnreadable extends Error {
  constructor(id: string) {
    super(
      `the secret of provider ${id} was sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS`,
    );
    this.name = 'ProviderSecretUnreadable';
  }
}

/**
 * The provider with its secret opened, or null when the store has none of that id. A secret
 * sealed under a previous APP_SECRET is sealed again under the current one, so the old secret can
 * leave APP_SECRET_PREVIOUS once every provider has been used (or saved) since the rotation.
 */
export async function loadProvider(db: StoreQueryable, keys: Keys, id: string): Promise<ProviderConfig | null> {
  const [row] = await db.query<ProviderRow>(
    `SELECT ${providerColumns} FROM store_providers WHERE store_id = $1 AND id = $2`,
    [db.storeId, id],
  );
  if (row === undefined) return null;
  const opened = unseal(acceptedKeys(keys, 'providers'), row.sealed_secret);
  if (opened === undefined) throw new ProviderSecretUnreadable(id);
  if (opened.keyIndex > 0) {
    await db.query(
      'UPDATE store_providers SET sealed_secret = $3 WHERE store_id = $1 AND id = $2 AND sealed_secret = $4',
      [db.storeId, id, seal(keys.providers, opened.text), row.sealed_secret],
    );
  }
  return {
    id: row.id,
    name: row.name,
    preset: row.preset,
    issuer: row.issuer,
    clientId: row.client_id,
    secret:
      row.key_id === null || row.team_id === null
        ? { kind: 'client_secret', value: opened.text }
        : { kind: 'private_key', privateKey: opened.text, keyId: row.key_id, teamId: row.team_id },
    scopes: row.scopes,
    responseMode: row.response_mode,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** Deletes up to `limit` providers of a deleted store; returns how many. */
export async function deleteStoreProviders(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'store_providers', key: ['store_id', 'id'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
