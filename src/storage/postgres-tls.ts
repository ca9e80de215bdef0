import type { ConnectionOptions } from 'node:tls';

/**
 * What `sslmode` in DATABASE_URL means in this service. node-postgres 8 reads the same words with
 * its own meanings (`require` and `verify-ca` verify like `verify-full` unless
 * `uselibpqcompat=true`, which then makes `require` verify nothing), and version 9 will change
 * them again; so the service reads the TLS parameters itself, hands node-postgres the URL without
 * them, and sets its `ssl` option explicitly.
 *
 * - absent or `disable`: no TLS (the embedded server's socket, a server on the same host).
 * - `require`: TLS, with the certificate chain and the host name verified, like `verify-full`.
 *   Stricter than libpq, whose `require` accepts any certificate: a connection that encrypts
 *   to whoever answers protects nothing from someone on the path.
 * - `verify-ca`: TLS, the chain verified against DATABASE_CA_FILE (required), the host name not
 *   checked: for a private CA that signs only this database's certificates.
 * - `verify-full`: TLS, chain and host name (DNS or IP subject alternative name) verified.
 *
 * The chain is verified against DATABASE_CA_FILE when it is set (in place of Node's public roots),
 * else against the public roots. `prefer` and `allow` are refused: they would fall back to an
 * unencrypted connection without a word.
 */
export type SslMode = 'disable' | 'require' | 'verify-ca' | 'verify-full';

const sslModes: readonly SslMode[] = ['disable', 'require', 'verify-ca', 'verify-full'];

/** URL parameters node-postgres would read for TLS with other meanings; each is refused with why. */
const refusedParameters: Record<string, string> = {
  sslrootcert: 'sslrootcert is not read from DATABASE_URL: set DATABASE_CA_FILE to the CA bundle',
  sslcert: 'client certificates (sslcert, sslkey) are not supported: use a password',
  sslkey: 'client certificates (sslcert, sslkey) are not supported: use a password',
  sslpassword: 'client certificates (sslcert, sslkey) are not supported: use a password',
  ssl: 'set TLS with sslmode (disable, require, verify-ca or verify-full), not ssl',
  uselibpqcompat:
    'uselibpqcompat is not read: sslmode has the meanings docs/guides/encryption-redis-and-pgbouncer.md gives',
  sslnegotiation: 'sslnegotiation is not supported: remove it',
};

/** The sslmode a DATABASE_URL asks for; throws with a one-line reason for anything it cannot honour. */
export function sslModeOf(url: string): SslMode {
  const params = new URL(url).searchParams;
  for (const [name, reason] of Object.entries(refusedParameters)) if (params.has(name)) throw new Error(reason);
  const mode = params.get('sslmode') ?? 'disable';
  if (mode === 'prefer' || mode === 'allow')
    throw new Error(
      `sslmode=${mode} would fall back to an unencrypted connection: use verify-full (or require, verify-ca), or disable`,
    );
  if (mode === 'no-verify')
    throw new Error('sslmode=no-verify accepts any certificate: use verify-full with DATABASE_CA_FILE');
  if (!(sslModes as readonly string[]).includes(mode))
    throw new Error(`sslmode must be one of ${sslModes.join(', ')}, got "${mode}"`);
  return mode as SslMode;
}

/**
 * node-postgres settings for a DATABASE_URL and its CA bundle: the URL without `sslmode` (which
 * node-postgres would otherwise read over the `ssl` option) and the `ssl` option itself.
 */
export function postgresTls(
  url: string,
  ca: string | undefined,
): { connectionString: string; ssl: false | ConnectionOptions } {
  const mode = sslModeOf(url);
  const parsed = new URL(url);
  parsed.searchParams.delete('sslmode');
  const connectionString = new URL(url).searchParams.has('sslmode') ? parsed.toString() : url;
  if (mode === 'disable') return { connectionString, ssl: false };
  if (mode === 'verify-ca' && ca === undefined) throw new Error('sslmode=verify-ca needs DATABASE_CA_FILE');
  const ssl: ConnectionOptions = {
    rejectUnauthorized: true,
    ...(ca === undefined ? {} : { ca }),
    // verify-ca: any certificate the private CA signed is this database's, whatever name it bears.
    ...(mode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
  };
  return { connectionString, ssl };
}
