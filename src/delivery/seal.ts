import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { MessageContent } from './message.js';

// Outbox rows hold codes until they are sent; sealing keeps a database dump from revealing them.
export function sealContent(key: Buffer, content: MessageContent): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(content), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

export function unsealContent(key: Buffer, sealed: string): MessageContent {
  const raw = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  const json = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  return JSON.parse(json) as MessageContent;
}
