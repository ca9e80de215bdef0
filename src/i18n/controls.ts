/**
 * Characters no name may hold (a store's, a customer's, a passkey's, a provider's, an SMS sender):
 * C0 and C1 controls, and the bidirectional controls (U+061C, U+200E–F, U+202A–E, U+2066–9), which
 * reorder the text around them. A store named `Shop\u202E` would show `Your Shop verification code
 * is 123456` with the code reversed; in a right-to-left message any name is isolated, but an
 * English one takes it as written.
 */
export const controlCharacter = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** The same characters removed, for a name the service takes from elsewhere (a provider's). */
export function withoutControls(text: string): string {
  return text.replace(new RegExp(controlCharacter.source, 'gu'), '');
}
