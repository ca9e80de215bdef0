import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { MessageContent } from './message.js';

// Outbox rows hold codes until they are sent; sealing keeps a database dump from revealing them.
export function sealContent(key: Buffer, content: MessageContent): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(content), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** A body no accepted key opens: sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS. */
export class UnknownSealError extends Error {
  constructor() {
    super('sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS');
    this.name = 'UnknownSealError';
  }
}

function openWith(key: Buffer, raw: Buffer): MessageContent | undefined {
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  try {
    const json = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    return JSON.parse(json) as MessageContent;
  } catch {
    return undefined; // GCM refused the tag: another key sealed it (or the row was altered)
  }
}

/** Opens a body with the first of `keys` whose tag it carries (the current key first, then the previous ones). */
export function unsealContent(keys: Buffer | readonly Buffer[], sealed: string): MessageContent {
  const raw = Buffer.from(sealed, 'base64url');
  for (const key of Buffer.isBuffer(keys) ? [keys] : keys) {
    const content = openWith(key, raw);
    if (content !== undefined) return content;
  }
  throw new UnknownSealError();
}
