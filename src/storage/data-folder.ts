import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** A generated secret is 32 random bytes in base64url; anything shorter was cut or tampered with. */
const secretLength = 43;

function readSecret(file: string): string {
  const secret = fs.readFileSync(file, 'utf8').trim();
  if (secret.length < secretLength) {
    throw new Error(`${file} holds no complete secret: restore it from a backup, or remove it to make a new one`);
  }
  return secret;
}

/**
 * The deployment secret generated into the folder on first start. It is written to a file of its
 * own and linked into place, so a process starting at the same moment never reads a half-written
 * secret: it either wins the link or reads the complete file of the one that did.
 */
export function loadOrCreateSecret(dataDir: string): string {
  const file = path.join(dataDir, 'secret');
  try {
    return readSecret(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const draft = path.join(dataDir, `.secret-${process.pid}-${randomBytes(4).toString('hex')}`);
  fs.writeFileSync(draft, randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.rmSync(draft, { force: true });
  }
  return readSecret(file);
}
