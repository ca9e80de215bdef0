import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

export type KeyPurpose =
  'codes' | 'csrf' | 'outbox' | 'counters' | 'providers' | 'providerCookies' | 'hooks' | 'secondSteps';

/** Separate keys for separate uses, all derived from one deployment secret. */
export type KeySet = Record<KeyPurpose, Buffer>;

/**
 * The keys of APP_SECRET, which make every new code MAC, CSRF token and sealed body, and those of
 * each APP_SECRET_PREVIOUS entry, which are only accepted when checking. Rotating the secret this
 * way keeps what was made under the old one working until the operator drops it from the list.
 * The counters key names rate-limit counters (http/core/rate-limit.ts) and is only ever the current one.
 */
export interface Keys extends KeySet {
  previous: readonly KeySet[];
}

function deriveKeySet(secret: string): KeySet {
  const derive = (purpose: KeyPurpose) => createHmac('sha256', secret).update(`storefront-auth:${purpose}`).digest();
  return {
    codes: derive('codes'),
    csrf: derive('csrf'),
    outbox: derive('outbox'),
    counters: derive('counters'),
    providers: derive('providers'),
    providerCookies: derive('providerCookies'),
    hooks: derive('hooks'),
    secondSteps: derive('secondSteps'),
  };
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

/**
 * Encrypts and authenticates `text` (AES-256-GCM, a fresh IV each time): what a database dump or
 * a browser must neither read nor alter (an outbox body, a provider's client secret, the cookie of
 * a provider sign-in under way).
 */
export function seal(key: Buffer, text: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/**
 * Opens what `seal` made with the first of `keys` whose tag it carries (the current key first,
 * then the previous ones): the text and the index of the key, or undefined when none opens it.
 */
export function unseal(keys: readonly Buffer[], sealed: string): { text: string; keyIndex: number } | undefined {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < 28) return undefined;
  for (const [keyIndex, key] of keys.entries()) {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    try {
      return { text: Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'), keyIndex };
    } catch {
      // GCM refused the tag: another key sealed it (or it was altered).
    }
  }
  return undefined;
}
