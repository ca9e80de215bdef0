/**
 * The relying party of a passkey ceremony: the domain passkeys are bound to (RP ID), the name
 * authenticators show (the store's), and the page origins whose ceremonies are accepted.
 */
export interface RelyingParty {
  id: string;
  name: string;
  origins: string[];
}

// Ed25519, ES256 and RS256: what platform authenticators and security keys make.
export const passkeyAlgorithms = [-8, -7, -257];

/** How long a browser may wait for the customer, in milliseconds; the challenge lasts 5 minutes. */
export const passkeyCeremonyTimeoutMilliseconds = 2 * 60 * 1000;

/**
 * @simplewebauthn/server, loaded with the first passkey ceremony rather than at the start: it is
 * the largest module the service would load (0.2–0.45 s of every start, measured) and most starts
 * never use it. Node keeps the module, so later ceremonies get it at once.
 */
export const webauthn = () => import('@simplewebauthn/server');
