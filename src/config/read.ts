import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { maxPort, settings, type Setting, type SettingName } from './declaration.js';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

export type Env = Record<string, string | undefined>;

type Settings = typeof settings;
type NameOf<Kind extends string> = { [N in SettingName]: Settings[N]['kind'] extends Kind ? N : never }[SettingName];

/** The setting's declaration, of the kind the caller reads it as: a name not declared is a bug. */
function declared<Kind extends string>(name: string, kind: Kind): Extract<Settings[SettingName], { kind: Kind }> {
  const setting = (settings as Record<string, Settings[SettingName]>)[name];
  if (setting === undefined || setting.kind !== kind) throw new Error(`${name} is not declared as a ${kind} setting`);
  return setting as Extract<Settings[SettingName], { kind: Kind }>;
}

/** The trimmed value, else the declared default; a blank value counts as unset. */
export function text<N extends NameOf<'text'>>(
  env: Env,
  name: N,
): Settings[N] extends { default: string } ? string : string | undefined;
export function text(env: Env, name: NameOf<'text'>): string | undefined {
  const setting: Extract<Setting, { kind: 'text' }> = declared(name, 'text');
  return given(env, name) ?? setting.default;
}

/** Whether the variable is set to something other than blanks, whatever its default. */
export function isSet(env: Env, name: SettingName): boolean {
  if (!Object.hasOwn(settings, name)) throw new Error(`${name} is not a declared setting`);
  return (env[name]?.trim() ?? '') !== '';
}

function given(env: Env, name: SettingName): string | undefined {
  return isSet(env, name) ? env[name]!.trim() : undefined;
}

/** true/1/yes/on or false/0/no/off; `fallback` stands for a default that depends on other settings. */
export function flag(env: Env, name: NameOf<'boolean'>, fallback?: boolean): boolean {
  const setting: Extract<Setting, { kind: 'boolean' }> = declared(name, 'boolean');
  const value = given(env, name);
  if (value === undefined) return fallback ?? setting.default ?? missingDefault(name);
  if (['true', '1', 'yes', 'on'].includes(value.toLowerCase())) return true;
  if (['false', '0', 'no', 'off'].includes(value.toLowerCase())) return false;
  throw new ConfigError(name, `expected true or false, got "${value}"`);
}

export function choice<N extends NameOf<'choice'>>(env: Env, name: N): Settings[N]['choices'][number] {
  const { choices, default: fallback } = declared(name, 'choice');
  const value = given(env, name);
  if (value === undefined) return fallback;
  if ((choices as readonly string[]).includes(value)) return value as Settings[N]['choices'][number];
  throw new ConfigError(name, `expected one of ${choices.join(', ')}, got "${value}"`);
}

/**
 * A number setting within its declared bounds. The maximum is required: a value that passes this
 * check must work everywhere it is used (a cutoff PostgreSQL can store, a timer Node keeps), so a
 * typo stops the start, naming the variable, instead of failing later at every use. `fallback`
 * stands for a default that depends on the machine.
 */
export function number(env: Env, name: NameOf<'number'>, fallback?: number): number {
  const setting: Extract<Setting, { kind: 'number' }> = declared(name, 'number');
  const { min, max, integer = false } = setting;
  const raw = given(env, name);
  if (raw === undefined) return fallback ?? setting.default ?? missingDefault(name);
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new ConfigError(
      name,
      `expected ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, got "${raw}"`,
    );
  }
  return value;
}

/** A port to listen on; the default is checked like a value given. */
export function listenPort(env: Env, name: NameOf<'port'>): number {
  const raw = given(env, name) ?? String(declared(name, 'port').default);
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > maxPort) {
    throw new ConfigError(name, `expected a port number, got "${raw}"`);
  }
  return port;
}

export function url(env: Env, name: NameOf<'url'>): string | undefined {
  const { protocols } = declared(name, 'url');
  const value = given(env, name);
  if (value === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, 'not a valid URL');
  }
  if (!(protocols as readonly string[]).includes(parsed.protocol)) {
    throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL`);
  }
  return value;
}

/** The raw text of a comma-separated setting, split by the check that knows its entries. */
export function list(env: Env, name: NameOf<'list'>): string | undefined {
  declared(name, 'list');
  return given(env, name);
}

/**
 * A PEM CA bundle named by a variable, read once here so a missing or mistaken file stops the start
 * instead of failing every connection later. Only its certificates are kept.
 */
export function caFile(env: Env, name: NameOf<'caFile'>): string | undefined {
  declared(name, 'caFile');
  const file = given(env, name);
  if (file === undefined) return undefined;
  let content: string;
  try {
    content = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(name, `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const certificates = content.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (certificates.length === 0) throw new ConfigError(name, `${file} holds no PEM certificate`);
  certificates.forEach((pem, index) => {
    try {
      new X509Certificate(pem);
    } catch {
      throw new ConfigError(name, `certificate ${index + 1} in ${file} is not a valid X.509 certificate`);
    }
  });
  return certificates.join('\n');
}

// A setting read without a declared default must be given one by its caller.
function missingDefault(name: string): never {
  throw new Error(`${name} has no default: its reader must pass one`);
}
