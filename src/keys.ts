import { createHmac } from 'node:crypto';

export type KeyPurpose = 'codes' | 'csrf' | 'outbox' | 'counters';

/** Separate keys for separate uses, all derived from one deployment secret. */
export type KeySet = Record<KeyPurpose, Buffer>;

/**
 * The keys of APP_SECRET, which make every new code MAC, CSRF token and sealed body, and those of
 * each APP_SECRET_PREVIOUS entry, which are only accepted when checking. Rotating the secret this
 * way keeps what was made under the old one working until the operator drops it from the list.
 * The counters key names rate-limit counters (http/rate-limit.ts) and is only ever the current one.
 */
export interface Keys extends KeySet {
  previous: readonly KeySet[];
}

function deriveKeySet(secret: string): KeySet {
  const derive = (purpose: KeyPurpose) => createHmac('sha256', secret).update(`storefront-auth:${purpose}`).digest();
  return { codes: derive('codes'), csrf: derive('csrf'), outbox: derive('outbox'), counters: derive('counters') };
}

export function deriveKeys(secret: string, previousSecrets: readonly string[] = []): Keys {
  const previous = [...new Set(previousSecrets)].filter((old) => old !== secret).map(deriveKeySet);
  return { ...deriveKeySet(secret), previous };
}

/** Every key a value of this purpose may have been made with, the current one first. */
export function acceptedKeys<P extends KeyPurpose>(
  keys: Pick<Keys, P> & { previous: readonly Pick<KeySet, P>[] },
  purpose: P,
): Buffer[] {
  return [keys[purpose], ...keys.previous.map((old) => old[purpose])];
}
