import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCertificates {
  folder: string;
  /** The CA that signed the server certificate (PEM). */
  caFile: string;
  /** A server certificate for localhost and 127.0.0.1 only, and its key (PEM). */
  certFile: string;
  keyFile: string;
  /** A second CA that signed nothing the servers present: a client trusting it must refuse them. */
  otherCaFile: string;
  remove(): void;
}

async function makeCa(folder: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(folder, `${name}.crt`);
  const key = path.join(folder, `${name}.key`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=Storefront test ${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  return { cert, key };
}

/**
 * A throwaway CA, a server certificate it signs for localhost and 127.0.0.1 (subject alternative
 * names; nothing else, so 127.0.0.2 reaches the same server under a name the certificate lacks),
 * and an unrelated CA, made with the openssl command line in a temporary folder.
 */
export async function makeTestCertificates(): Promise<TestCertificates> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-tls-'));
  try {
    const ca = await makeCa(folder, 'ca');
    const other = await makeCa(folder, 'other-ca');
    const keyFile = path.join(folder, 'server.key');
    const csr = path.join(folder, 'server.csr');
    const certFile = path.join(folder, 'server.crt');
    const extensions = path.join(folder, 'server.ext');
    fs.writeFileSync(
      extensions,
      'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n',
    );
    await run('openssl', [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      '/CN=localhost',
      '-keyout',
      keyFile,
      '-out',
      csr,
    ]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      extensions,
      '-out',
      certFile,
    ]);
    return {
      folder,
      caFile: ca.cert,
      certFile,
      keyFile,
      otherCaFile: other.cert,
      remove: () => fs.rmSync(folder, { recursive: true, force: true }),
    };
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}
