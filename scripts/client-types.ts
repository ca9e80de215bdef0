/**
 * `npm run client:types`: writes packages/client/src/api-types.ts, the wire types of the typed
 * client, from the route schemas (src/http/core/schemas.ts and the schemas.ts of src/http/passkeys/,
 * providers/ and two-factor/) and the problem codes (src/http/core/problems.ts). The client is a
 * package of its own with no dependencies, so it cannot import them: it carries this plain
 * TypeScript copy, which test/client/api-types.test.ts keeps equal to what this script makes now
 * (and to TypeBox's own Static types).
 *
 *   node --import tsx scripts/client-types.ts [--check]   (--check: exit 1 when the file is stale)
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kind, type TSchema } from '@sinclair/typebox';
import * as passkeySchemas from '../src/http/passkeys/schemas.js';
import * as providerSchemas from '../src/http/providers/schemas.js';
import { adminProblemCatalogue, problemCatalogue } from '../src/http/core/problems.js';
import * as schemas from '../src/http/core/schemas.js';
import * as twoFactorSchemas from '../src/http/two-factor/schemas.js';

export const clientTypesFile = path.join(import.meta.dirname, '..', 'packages', 'client', 'src', 'api-types.ts');

/** What the client names, in the order the file lists them. */
const exported: Record<string, TSchema> = {
  RegisterBody: schemas.RegisterBody,
  VerifyBody: schemas.VerifyBody,
  IdentityBody: schemas.IdentityBody,
  LoginBody: schemas.LoginBody,
  ResetPasswordBody: schemas.ResetPasswordBody,
  ChangePasswordBody: schemas.ChangePasswordBody,
  ProfileBody: schemas.ProfileBody,
  IdentityChangeBody: schemas.IdentityChangeBody,
  IdentityConfirmBody: schemas.IdentityConfirmBody,
  DeleteAccountBody: schemas.DeleteAccountBody,
  Customer: schemas.Customer,
  AuthSession: schemas.AuthSession,
  TwoFactorRequired: schemas.TwoFactorRequired,
  SignInAnswer: schemas.SignInAnswer,
  AcceptedStatus: schemas.AcceptedStatus,
  PasswordResetStatus: schemas.PasswordResetStatus,
  PasswordChangedStatus: schemas.PasswordChangedStatus,
  SignedOutStatus: schemas.SignedOutStatus,
  Session: schemas.Session,
  SessionList: schemas.SessionList,
  RevokedStatus: schemas.RevokedStatus,
  RevokedCountStatus: schemas.RevokedCountStatus,
  DeletedStatus: schemas.DeletedStatus,
  AccountExport: schemas.AccountExport,
  PlatformInfo: schemas.PlatformInfo,
  HealthStatus: schemas.HealthStatus,
  ReadinessChecks: schemas.ReadinessChecks,
  HealthReady: schemas.HealthReady,
  PasskeyCreationOptions: passkeySchemas.PasskeyCreationOptions,
  PasskeyRequestOptions: passkeySchemas.PasskeyRequestOptions,
  PasskeyRegisterBody: passkeySchemas.PasskeyRegisterBody,
  PasskeyLoginBody: passkeySchemas.PasskeyLoginBody,
  Passkey: passkeySchemas.Passkey,
  PasskeyList: passkeySchemas.PasskeyList,
  ProviderList: providerSchemas.ProviderList,
  LinkedProviders: providerSchemas.LinkedProviders,
  UnlinkedStatus: providerSchemas.UnlinkedStatus,
  SecondStepBody: twoFactorSchemas.SecondStepBody,
  TwoFactorStatus: twoFactorSchemas.TwoFactorStatus,
  TwoFactorSetupBody: twoFactorSchemas.TwoFactorSetupBody,
  TwoFactorSetup: twoFactorSchemas.TwoFactorSetup,
  TwoFactorConfirmBody: twoFactorSchemas.TwoFactorConfirmBody,
  TwoFactorChangeBody: twoFactorSchemas.TwoFactorChangeBody,
  TwoFactorOffStatus: twoFactorSchemas.TwoFactorOffStatus,
  RecoveryCodes: twoFactorSchemas.RecoveryCodes,
};

type Schema = TSchema & Record<string, unknown>;

function comment(text: unknown, indent: string): string {
  if (typeof text !== 'string' || text === '') return '';
  return `${indent}/** ${text.replace(/\*\//g, '*\\/').replace(/\s*\n\s*/g, ' ')} */\n`;
}

/** What the schema says of itself; a time says how it is written. */
function descriptionOf(schema: Schema): unknown {
  const isTime = (member: Schema) => member['format'] === 'date-time';
  const members = schema[Kind] === 'Union' ? (schema['anyOf'] as Schema[]) : [schema];
  return schema['description'] ?? (members.some(isTime) ? 'An ISO 8601 date and time (UTC).' : undefined);
}

/** The TypeScript for one schema; a schema the file exports under a name is referred to by it. */
function typeOf(schema: Schema, indent: string, names: Map<TSchema, string>): string {
  const named = names.get(schema);
  if (named !== undefined) return named;
  switch (schema[Kind]) {
    case 'String':
      return 'string';
    case 'Integer':
    case 'Number':
      return 'number';
    case 'Boolean':
      return 'boolean';
    case 'Null':
      return 'null';
    case 'Literal': {
      const value = schema['const'];
      return typeof value === 'string' ? `'${value.replace(/[\\']/g, '\\$&')}'` : String(value);
    }
    case 'Union':
      return (schema['anyOf'] as Schema[]).map((member) => typeOf(member, indent, names)).join(' | ');
    case 'Array': {
      const items = typeOf(schema['items'] as Schema, indent, names);
      return /[ |]/.test(items) && !items.startsWith('{') ? `Array<${items}>` : `${items}[]`;
    }
    case 'Record': {
      const [value] = Object.values(schema['patternProperties'] as Record<string, Schema>);
      return `Record<string, ${typeOf(value!, indent, names)}>`;
    }
    case 'Object':
      return objectOf(schema, indent, names);
    default:
      throw new Error(`scripts/client-types.ts has no TypeScript for a ${String(schema[Kind])} schema`);
  }
}

function objectOf(schema: Schema, indent: string, names: Map<TSchema, string>): string {
  const properties = Object.entries(schema['properties'] as Record<string, Schema>);
  // TypeBox's own type for an object without properties (WebAuthn's open `extensions`).
  if (properties.length === 0) return '{}';
  const required = new Set((schema['required'] as string[] | undefined) ?? []);
  const inner = `${indent}  `;
  const lines = properties.map(
    ([name, property]) =>
      `${comment(descriptionOf(property), inner)}${inner}${name}${required.has(name) ? '' : '?'}: ${typeOf(property, inner, names)};\n`,
  );
  return `{\n${lines.join('')}${indent}}`;
}

/** The whole of packages/client/src/api-types.ts. */
export function clientTypesSource(): string {
  const names = new Map(Object.entries(exported).map(([name, schema]) => [schema, name] as const));
  const codes = Object.keys(problemCatalogue).map((code) => `  | '${code}'`);
  const adminCodes = Object.keys(adminProblemCatalogue).map((code) => `  | '${code}'`);
  const declarations = Object.entries(exported).map(([name, schema]) => {
    // The schema itself is not looked up by name here, or it would refer to itself.
    const others = new Map([...names].filter(([other]) => other !== schema));
    // An object is an interface; anything else (a union of answers) a type.
    if (schema[Kind] !== 'Object')
      return `${comment(schema.description, '')}export type ${name} = ${typeOf(schema as Schema, '', others)};\n`;
    const body = objectOf(schema as Schema, '', others);
    return `${comment(schema.description, '')}export interface ${name} ${body}\n`;
  });
  return [
    '// Written by scripts/client-types.ts from the route schemas (src/http/core/schemas.ts,',
    '// src/http/passkeys/schemas.ts) and the problem codes (src/http/core/problems.ts): do not edit it by',
    '// hand; run `npm run client:types` after changing them.',
    '',
    '/** Every error code the API can answer with (the `code` of its problem documents). */',
    `export type ProblemCode =\n${codes.join('\n')};`,
    '',
    '/** The codes only the admin listener answers with, besides those of ProblemCode. */',
    `export type AdminProblemCode =\n${adminCodes.join('\n')};`,
    '',
    declarations.join('\n'),
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const source = clientTypesSource();
  const current = fs.existsSync(clientTypesFile) ? fs.readFileSync(clientTypesFile, 'utf8') : undefined;
  const relative = path.relative(process.cwd(), clientTypesFile);
  if (process.argv.includes('--check')) {
    if (current !== source) {
      console.error(`${relative} is not what the route schemas make: run npm run client:types`);
      process.exitCode = 1;
    } else {
      console.log(`${relative} is up to date`);
    }
  } else if (current === source) {
    console.log(`${relative} is up to date`);
  } else {
    fs.writeFileSync(clientTypesFile, source);
    console.log(`wrote ${relative}`);
  }
}
