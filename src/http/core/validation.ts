import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import type { Phrase } from '../../i18n/strings.js';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

function fieldOf(error: FastifySchemaValidationError): string {
  if (error.keyword === 'required') return String(error.params['missingProperty']);
  // A schema that refuses unknown fields (the admin API's) names the field it refused.
  if (error.keyword === 'additionalProperties') {
    const parent = error.instancePath.split('/').slice(1).join('.');
    const name = String(error.params['additionalProperty']);
    return parent === '' ? name : `${parent}.${name}`;
  }
  const field = error.instancePath.split('/')[1];
  return field === undefined || field === '' ? 'body' : field;
}

// Our own words for each rule (`field.*` of locales/), so no validator library text reaches a client.
function messageOf(error: FastifySchemaValidationError, field: string): Phrase {
  const limit = Number(error.params['limit']);
  switch (error.keyword) {
    case 'required':
      return fieldPhrase('required');
    case 'additionalProperties':
      return fieldPhrase('not_a_field');
    case 'type':
      return field === 'body' ? fieldPhrase('json_object') : typePhrase(String(error.params['type']));
    case 'minLength':
      return limit === 1 ? fieldPhrase('not_empty') : fieldPhrase('min_length', { count: limit });
    case 'maxLength':
      return fieldPhrase('max_length', { count: limit });
    case 'pattern':
      return fieldPhrase(field === 'code' ? 'six_digits' : 'wrong_format');
    default:
      return fieldPhrase('invalid');
  }
}

// A JSON type named in the reader's language ("Must be text."), not as the schema spells it.
const jsonTypes = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object', 'null']);
function typePhrase(type: string): Phrase {
  // A union (`string,null`) is named by its first member, which is what the field mostly takes.
  const first = type.split(',')[0]!;
  return fieldPhrase(`type.${jsonTypes.has(first) ? first : 'unknown'}`);
}

/** Fastify's schema errors as `errors`: each failing field with its messages. */
export function validationErrors(errors: FastifySchemaValidationError[]): Record<string, Phrase[]> {
  const result: Record<string, Phrase[]> = {};
  for (const error of errors) {
    const field = fieldOf(error);
    const message = messageOf(error, field);
    const messages = (result[field] ??= []);
    if (!messages.some((known) => known.key === message.key)) messages.push(message);
  }
  return result;
}

/**
 * The text fields of a body that failed its schema, for the domain to check what the schema could
 * not (such as which identity field the store needs); null when the body is not an object at all.
 */
export function textFields(body: unknown): Record<string, string> | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  return Object.fromEntries(
    Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

// Outside a pair, a surrogate is no character. The hash, PostgreSQL and Redis would each turn it
// into U+FFFD, so two different inputs would act as one (a password ending in \ud800 would also
// accept \udbff and \ufffd).
const loneSurrogate = /\p{Surrogate}/u;
const wellFormedMessage = fieldPhrase('unicode');
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A JSON body's bytes as text, or null when they are not UTF-8: decoding them leniently would read
 * each bad byte as U+FFFD, another way for two different inputs to become one.
 */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

function holdsLoneSurrogate(value: unknown): boolean {
  // A loop, not recursion: a 16 KiB body can nest thousands of levels deep.
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (loneSurrogate.test(item)) return true;
    } else if (item !== null && typeof item === 'object') {
      for (const [key, inner] of Object.entries(item)) pending.push(key, inner);
    }
  }
  return false;
}

/**
 * Every field of a parsed body whose text (anywhere inside it) is not well-formed Unicode, for
 * `errors`; checked for every body at parsing, so no route and no future field can miss it.
 */
export function illFormedTextErrors(body: unknown): Record<string, Phrase[]> {
  const errors: Record<string, Phrase[]> = {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    if (holdsLoneSurrogate(body)) errors['body'] = [wellFormedMessage];
    return errors;
  }
  for (const [field, value] of Object.entries(body)) {
    if (holdsLoneSurrogate(field)) errors['body'] = [wellFormedMessage];
    else if (holdsLoneSurrogate(value)) errors[field] = [wellFormedMessage];
  }
  return errors;
}
