import { StringDecoder } from 'node:string_decoder';
import type { IdentityMode } from '../../config.js';
import { controlCharacter } from '../../i18n/controls.js';
import type { StoreContext } from '../../store/store.js';
import { maxNameLength } from './fields.js';
import { callingCodeOf, normalizeEmail, normalizePhone } from './identity.js';
import { describeLegacyHash } from './legacy-hashes.cjs';

/**
 * One line of a customer import (NDJSON, one customer a line, in the export's own format), read
 * and checked on its own: what it says, or every reason it is refused. A refusal names the line
 * and the field, never a value from the file: the report is kept, and the file holds identities.
 */

export interface ImportedProvider {
  issuer: string;
  subject: string;
  email: string | null;
}

/** A line that passed: only the identity is sure to be there; every other field is changed only when given. */
export interface ImportRecord {
  line: number;
  identity: { type: IdentityMode; value: string };
  name?: string;
  verified?: boolean;
  passwordHash?: string;
  externalId?: string;
  createdAt?: Date;
  locale?: string;
  providers: ImportedProvider[];
  /** Send a set-password code (an invitation) when the account has no password. */
  invite?: boolean;
}

export interface ImportRefusal {
  line: number;
  field: string;
  reason: string;
}

const knownFields = new Set([
  'email',
  'phone',
  'name',
  'verified',
  'password_hash',
  'external_id',
  'created_at',
  'locale',
  'providers',
  'invite',
  // An export's note that a second step was on: taken and left, since no secret comes with it.
  'two_factor',
]);
const maxExternalIdLength = 255;
const maxProvidersPerLine = 10;
/** No online shop kept customers before this: an earlier date is a unit or format mistake. */
const earliestCreatedAt = Date.UTC(1990, 0, 1);

type LineStore = Pick<StoreContext, 'identityMode' | 'languages'>;

export function parseImportLine(
  store: LineStore,
  text: string,
  line: number,
  context: { now: Date; allowedCallingCodes: readonly string[] },
): { record: ImportRecord } | { refusals: ImportRefusal[] } {
  const refusals: ImportRefusal[] = [];
  const refuse = (field: string, reason: string) => refusals.push({ line, field, reason });
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    input = undefined;
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    refuse('line', 'not a JSON object');
    return { refusals };
  }
  const fields = input as Record<string, unknown>;
  for (const field of Object.keys(fields)) if (!knownFields.has(field)) refuse(field, 'unknown field');

  const identity = importedIdentity(store.identityMode, fields, context.allowedCallingCodes, refuse);
  const record: ImportRecord = { line, identity: { type: store.identityMode, value: identity ?? '' }, providers: [] };
  const optionalText = (field: string, max: number): string | undefined => {
    const value = fields[field];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') return void refuse(field, 'not a string');
    const trimmed = value.trim();
    if ([...trimmed].length > max) return void refuse(field, `longer than ${max} characters`);
    if (controlCharacter.test(trimmed)) return void refuse(field, 'holds control characters');
    return trimmed;
  };
  const name = optionalText('name', maxNameLength);
  if (name !== undefined) record.name = name;
  const externalId = optionalText('external_id', maxExternalIdLength);
  if (externalId === '') refuse('external_id', 'empty');
  else if (externalId !== undefined) record.externalId = externalId;

  if (fields.verified !== undefined && fields.verified !== null) {
    if (typeof fields.verified !== 'boolean') refuse('verified', 'not true or false');
    else record.verified = fields.verified;
  }
  if (fields.password_hash !== undefined && fields.password_hash !== null) {
    const hash = fields.password_hash;
    const described = typeof hash === 'string' ? describeLegacyHash(hash) : { refused: 'not a string' };
    if ('refused' in described) refuse('password_hash', described.refused);
    else record.passwordHash = hash as string;
  }
  if (fields.created_at !== undefined && fields.created_at !== null) {
    const at = typeof fields.created_at === 'string' ? Date.parse(fields.created_at) : Number.NaN;
    if (Number.isNaN(at)) refuse('created_at', 'not a date and time (ISO 8601)');
    else if (at < earliestCreatedAt || at > context.now.getTime() + 60_000)
      refuse('created_at', 'before 1990 or in the future');
    else record.createdAt = new Date(at);
  }
  if (fields.locale !== undefined && fields.locale !== null) {
    if (typeof fields.locale !== 'string' || !store.languages.includes(fields.locale))
      refuse('locale', `not one of the store's languages (${store.languages.join(', ')})`);
    else record.locale = fields.locale;
  }
  if (fields.invite !== undefined && fields.invite !== null) {
    if (typeof fields.invite !== 'boolean') refuse('invite', 'not true or false');
    else if (fields.invite && record.passwordHash !== undefined)
      refuse('invite', 'a line with a password_hash needs no invitation');
    else if (fields.invite) record.invite = true;
  }
  record.providers = importedProviders(fields.providers, refuse);
  return refusals.length > 0 ? { refusals } : { record };
}

function importedIdentity(
  mode: IdentityMode,
  fields: Record<string, unknown>,
  allowedCallingCodes: readonly string[],
  refuse: (field: string, reason: string) => void,
): string | undefined {
  const other = mode === 'email' ? 'phone' : 'email';
  if (fields[other] !== undefined)
    refuse(other, `the store's customers sign in with ${mode === 'email' ? 'an email' : 'a phone number'}`);
  const raw = fields[mode];
  if (raw === undefined || raw === null) return void refuse(mode, 'required');
  if (typeof raw !== 'string') return void refuse(mode, 'not a string');
  const value = mode === 'email' ? normalizeEmail(raw) : normalizePhone(raw);
  if (value === null) return void refuse(mode, mode === 'email' ? 'not an email address' : 'not a phone number');
  if (mode === 'phone' && allowedCallingCodes.length > 0 && !allowedCallingCodes.includes(callingCodeOf(value) ?? ''))
    return void refuse(mode, 'a calling code this deployment does not send to');
  return value;
}

function importedProviders(raw: unknown, refuse: (field: string, reason: string) => void): ImportedProvider[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return (void refuse('providers', 'not an array'), []);
  if (raw.length > maxProvidersPerLine) return (void refuse('providers', `more than ${maxProvidersPerLine}`), []);
  const providers: ImportedProvider[] = [];
  raw.forEach((entry: unknown, i) => {
    const field = `providers[${i}]`;
    const link = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const { issuer, subject, email } = link;
    if (typeof issuer !== 'string' || !/^https:\/\/[^\s]{1,500}$/.test(issuer))
      return refuse(`${field}.issuer`, 'not an https:// issuer URL');
    if (typeof subject !== 'string' || subject.length === 0 || subject.length > 255)
      return refuse(`${field}.subject`, 'not a subject of 1 to 255 characters');
    const normalized = typeof email === 'string' ? normalizeEmail(email) : null;
    if (email !== undefined && email !== null && normalized === null)
      return refuse(`${field}.email`, 'not an email address');
    providers.push({ issuer, subject, email: normalized });
  });
  return providers;
}

/** The longest line an import reads: a customer is a few hundred bytes; a megabyte is a file with no line breaks. */
const maxImportLineBytes = 64 * 1024;

/** An import's file that cannot be read as lines; its message is for the operator. */
export class ImportInputError extends Error {}

/**
 * The lines of an upload, read as they are asked for: nothing is read ahead, so memory holds one
 * chunk and one line whatever the file's size, and nothing is lost while the reader is busy.
 */
export async function* importLines(chunks: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let line = 0;
  for await (const chunk of chunks) {
    rest += typeof chunk === 'string' ? chunk : decoder.write(chunk);
    const parts = rest.split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts) {
      line += 1;
      yield part.endsWith('\r') ? part.slice(0, -1) : part;
    }
    if (rest.length > maxImportLineBytes)
      throw new ImportInputError(`line ${line + 1} is longer than ${maxImportLineBytes} bytes: is this NDJSON?`);
  }
  rest += decoder.end();
  if (rest !== '') yield rest.endsWith('\r') ? rest.slice(0, -1) : rest;
}
