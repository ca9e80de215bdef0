/**
 * Verifies a webhook the service sent, as Standard Webhooks 1.0 defines it: `webhook-signature`
 * holds `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the key of the endpoint's
 * `whsec_…` secret, one per secret while a secret is being rotated. Web Crypto only, so it runs
 * in Node 20+, Deno, Bun and edge runtimes without a dependency.
 */

/** The webhook is not one the service sent with this secret, or is too old to be trusted. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyWebhookOptions {
  /** How far the timestamp may be from now, either way, in seconds: 300 (five minutes) by default. */
  toleranceSeconds?: number;
  /** The time to compare with; now by default. */
  now?: Date;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string {
  const value =
    headers instanceof Headers
      ? headers.get(name)
      : (Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1] ?? null);
  const text = Array.isArray(value) ? value.join(' ') : value;
  if (text === null || text === undefined || text === '') throw new WebhookVerificationError(`no ${name} header`);
  return text;
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/**
 * Checks the headers and body of a webhook against the endpoint's secret and returns its parsed
 * body. Pass the body exactly as received (the raw text, before any JSON parsing). Throws
 * WebhookVerificationError when a header is missing, the timestamp is more than five minutes from
 * now, or no signature matches.
 */
export async function verifyWebhook<T = unknown>(
  secret: string,
  headers: HeaderSource,
  body: string,
  { toleranceSeconds = 300, now = new Date() }: VerifyWebhookOptions = {},
): Promise<T> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  const keyBytes = secret.startsWith('whsec_') ? fromBase64(secret.slice('whsec_'.length)) : null;
  if (keyBytes === null || keyBytes.length === 0)
    throw new WebhookVerificationError('the secret is not a whsec_ secret');
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > toleranceSeconds)
    throw new WebhookVerificationError('webhook-timestamp is too far from now');
  const key = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const entry of signatures.split(' ')) {
    const [version, encoded] = entry.split(',', 2);
    const signature = version === 'v1' && encoded !== undefined ? fromBase64(encoded) : null;
    // Web Crypto compares in constant time.
    if (signature !== null && (await crypto.subtle.verify('HMAC', key, signature, signed))) {
      return JSON.parse(body) as T;
    }
  }
  throw new WebhookVerificationError('no signature matches');
}
