import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

/** What a ceremony may be told to do differently from an honest browser and authenticator. */
export interface CeremonyOverrides {
  /** The page origin the browser puts in clientDataJSON. */
  origin?: string;
  /** The RP ID whose SHA-256 goes into authenticatorData. */
  rpId?: string;
  /** The signature counter to report; by default one more than last time. */
  counter?: number;
  /** The challenge to sign, in place of the options' own. */
  challenge?: string;
  /** The credential id the browser reports (`id` and `rawId`), in place of the authenticator's own. */
  reportedId?: string;
}

const flagUserPresent = 0x01;
const flagUserVerified = 0x04;
const flagAttestedCredentialData = 0x40;

function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url');
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

/**
 * A software authenticator that keeps one discoverable ES256 credential, answering as a browser
 * with a platform authenticator would: clientDataJSON, authenticatorData (RP ID hash, UP and UV
 * flags, signature counter, and at registration the attested credential data with a COSE EC2
 * key), attestation format "none", and real ECDSA signatures from node:crypto.
 */
export class SoftAuthenticator {
  readonly credentialId: Buffer;
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  counter = 0;
  /** The user handle from the registration options, returned by every assertion. */
  userHandle: string | undefined;

  constructor(
    readonly rpId = 'localhost',
    readonly origin = 'http://localhost',
    /** False: a synced passkey's authenticator, whose counter stays 0, so only the challenge stops a replay. */
    readonly keepsCounter = true,
    /** How many random bytes its credential id has; WebAuthn allows up to 1,023. */
    credentialIdBytes = 16,
  ) {
    this.credentialId = randomBytes(credentialIdBytes);
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = pair.privateKey;
    this.publicKey = pair.publicKey;
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  private coseKey(): Uint8Array {
    const jwk = this.publicKey.export({ format: 'jwk' });
    // kty EC2 (2), alg ES256 (-7), crv P-256 (1), x, y.
    return isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
  }

  private clientData(type: string, challenge: string, overrides: CeremonyOverrides): Buffer {
    return Buffer.from(
      JSON.stringify({
        type,
        challenge: overrides.challenge ?? challenge,
        origin: overrides.origin ?? this.origin,
        crossOrigin: false,
      }),
    );
  }

  private nextCounter(overrides: CeremonyOverrides): number {
    // Synced passkeys keep no counter and always report 0.
    this.counter = overrides.counter ?? (this.keepsCounter ? this.counter + 1 : 0);
    return this.counter;
  }

  /** `navigator.credentials.create` for these options, as @simplewebauthn/browser would send the result. */
  register(
    options: Pick<PublicKeyCredentialCreationOptionsJSON, 'challenge'> & { user: { id: string } },
    overrides: CeremonyOverrides = {},
  ): RegistrationResponseJSON {
    this.userHandle = options.user.id;
    const rpIdHash = createHash('sha256')
      .update(overrides.rpId ?? this.rpId)
      .digest();
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      rpIdHash,
      Buffer.from([flagUserPresent | flagUserVerified | flagAttestedCredentialData]),
      uint32(this.nextCounter(overrides)),
      Buffer.alloc(16), // AAGUID: none, as with attestation "none"
      idLength,
      this.credentialId,
      this.coseKey(),
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Uint8Array | Map<string, string>>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, string>()],
        ['authData', authData],
      ]),
    );
    return {
      id: overrides.reportedId ?? this.id,
      rawId: overrides.reportedId ?? this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(this.clientData('webauthn.create', options.challenge, overrides)),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** `navigator.credentials.get` for these options with this credential, signed with its key. */
  assert(
    options: Pick<PublicKeyCredentialRequestOptionsJSON, 'challenge'>,
    overrides: CeremonyOverrides = {},
  ): AuthenticationResponseJSON {
    const rpIdHash = createHash('sha256')
      .update(overrides.rpId ?? this.rpId)
      .digest();
    const authData = Buffer.concat([
      rpIdHash,
      Buffer.from([flagUserPresent | flagUserVerified]),
      uint32(this.nextCounter(overrides)),
    ]);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, overrides);
    const signed = Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]);
    // ECDSA over SHA-256, DER-encoded, as WebAuthn has it for ES256.
    const signature = sign('sha256', signed, this.privateKey);
    return {
      id: overrides.reportedId ?? this.id,
      rawId: overrides.reportedId ?? this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        ...(this.userHandle === undefined ? {} : { userHandle: this.userHandle }),
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
