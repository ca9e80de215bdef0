import { seal, unseal } from '../keys.js';
import type { MessageContent } from './message.js';

// Outbox rows hold codes until they are sent; sealing keeps a database dump from revealing them.
export function sealContent(key: Buffer, content: MessageContent): string {
  return seal(key, JSON.stringify(content));
}

/** A body no accepted key opens: sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS. */
export class UnknownSealError extends Error {
  constructor() {
    super('sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS');
    this.name = 'UnknownSealError';
  }
}

/** Opens a body with the first of `keys` whose tag it carries (the current key first, then the previous ones). */
export function unsealContent(keys: Buffer | readonly Buffer[], sealed: string): MessageContent {
  const opened = unseal(Buffer.isBuffer(keys) ? [keys] : keys, sealed);
  if (opened === undefined) throw new UnknownSealError();
  // Bodies sealed before messages had a language were written in English.
  return { language: 'en', ...(JSON.parse(opened.text) as Omit<MessageContent, 'language'>) };
}
