import { createHmac } from 'node:crypto';

/** Separate keys for separate uses, all derived from the one deployment secret. */
export interface Keys {
  codes: Buffer;
  csrf: Buffer;
  outbox: Buffer;
}

export function deriveKeys(secret: string): Keys {
  const derive = (purpose: string) => createHmac('sha256', secret).update(`storefront-auth:${purpose}`).digest();
  return { codes: derive('codes'), csrf: derive('csrf'), outbox: derive('outbox') };
}
