import type { Params, Phrase } from '../../i18n/strings.js';

/** `field.<name>` of locales/: what is wrong with a refused field, in whichever language it is answered. */
export function fieldPhrase(name: string, params?: Params): Phrase {
  return params === undefined ? { key: `field.${name}` } : { key: `field.${name}`, params };
}
