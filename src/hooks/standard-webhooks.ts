import { createHmac, randomUUID } from 'node:crypto';

/**
 * Signing as Standard Webhooks 1.0 says (standardwebhooks.com): a secret is `whsec_` and the
 * base64 of its key; each message carries `webhook-id`, `webhook-timestamp` (seconds) and
 * `webhook-signature`, `v1,` and the base64 HMAC-SHA256 of "id.timestamp.body", one per key
 * (two while a secret is being rotated), space-separated. Receivers verify it with the
 * specification's libraries in any language.
 */

const secretPrefix = 'whsec_';
/** The key sizes the specification's libraries make and accept. */
const minKeyBytes = 24;
const maxKeyBytes = 64;

/** The key of a `whsec_…` secret, or null when it is not one (say so to whoever typed it). */
export function webhookSecretKey(secret: string): Buffer | null {
  if (!secret.startsWith(secretPrefix)) return null;
  const encoded = secret.slice(secretPrefix.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= minKeyBytes && key.length <= maxKeyBytes ? key : null;
}

export const webhookSecretRule = `whsec_ followed by the base64 of ${minKeyBytes} to ${maxKeyBytes} random bytes`;

export function webhookSignature(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three headers of one message, signed with each key. */
export function webhookHeaders(
  keys: readonly Buffer[],
  body: string,
  { id = `msg_${randomUUID()}`, at = new Date() }: { id?: string; at?: Date } = {},
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': keys.map((key) => webhookSignature(key, id, timestamp, body)).join(' '),
  };
}
