import { Type, type Static } from '@sinclair/typebox';
import { maxPasswordLength } from '../../auth/rules/password.js';
import { maxRawNameLength } from '../core/schemas.js';

// The WebAuthn JSON shapes, as @simplewebauthn/browser sends and reads them. Objects stay open
// (additionalProperties), so fields newer browsers add pass through rather than being cut.
const open = { additionalProperties: true };
const base64url = Type.String({ maxLength: 4096, description: 'base64url' });
// WebAuthn caps a credential id at 1,023 bytes and a user handle at 64: 1,364 and 86 base64url
// characters. A longer one is no credential, so the schema refuses it like any malformed body,
// before it reaches the unique index on passkeys.credential_id (rows over ~2.7 KB fail there).
const credentialId = Type.String({ maxLength: 1364, description: 'base64url, at most 1,023 bytes' });
const userHandle = Type.String({ maxLength: 86, description: 'base64url, at most 64 bytes' });

const descriptor = Type.Object(
  { id: credentialId, type: Type.String(), transports: Type.Optional(Type.Array(Type.String())) },
  open,
);

export const PasskeyCreationOptions = Type.Object(
  {
    challenge: base64url,
    rp: Type.Object({ name: Type.String(), id: Type.Optional(Type.String()) }, open),
    user: Type.Object({ id: userHandle, name: Type.String(), displayName: Type.String() }, open),
    pubKeyCredParams: Type.Array(Type.Object({ type: Type.String(), alg: Type.Integer() }, open)),
    timeout: Type.Optional(Type.Integer()),
    excludeCredentials: Type.Optional(Type.Array(descriptor)),
    authenticatorSelection: Type.Optional(
      Type.Object(
        {
          residentKey: Type.Optional(Type.String()),
          requireResidentKey: Type.Optional(Type.Boolean()),
          userVerification: Type.Optional(Type.String()),
        },
        open,
      ),
    ),
    attestation: Type.Optional(Type.String()),
    extensions: Type.Optional(Type.Object({}, open)),
    hints: Type.Optional(Type.Array(Type.String())),
  },
  { ...open, description: "PublicKeyCredentialCreationOptionsJSON: hand it to the browser's WebAuthn call as is." },
);

export const PasskeyRequestOptions = Type.Object(
  {
    challenge: base64url,
    rpId: Type.Optional(Type.String()),
    timeout: Type.Optional(Type.Integer()),
    allowCredentials: Type.Optional(Type.Array(descriptor, { description: 'Always empty: discoverable credentials.' })),
    userVerification: Type.Optional(Type.String()),
    extensions: Type.Optional(Type.Object({}, open)),
    hints: Type.Optional(Type.Array(Type.String())),
  },
  { ...open, description: "PublicKeyCredentialRequestOptionsJSON: hand it to the browser's WebAuthn call as is." },
);

const credentialBase = {
  id: credentialId,
  rawId: credentialId,
  type: Type.Literal('public-key'),
  clientExtensionResults: Type.Optional(Type.Object({}, open)),
  authenticatorAttachment: Type.Optional(Type.String()),
};

export const PasskeyRegisterBody = Type.Object({
  credential: Type.Object(
    {
      ...credentialBase,
      response: Type.Object(
        {
          clientDataJSON: base64url,
          attestationObject: base64url,
          transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 16 })),
        },
        open,
      ),
    },
    { ...open, description: 'RegistrationResponseJSON, as the browser made it.' },
  ),
  name: Type.Optional(
    Type.String({
      maxLength: maxRawNameLength,
      description:
        'What to call the passkey: up to 120 characters once trimmed. Default: the device, e.g. "Chrome on macOS".',
    }),
  ),
  current_password: Type.Optional(
    Type.String({
      maxLength: maxPasswordLength,
      description:
        'The password the account has now; required when it has one, so a stolen session alone cannot add a lasting way in.',
    }),
  ),
});
export type PasskeyRegisterBody = Static<typeof PasskeyRegisterBody>;

export const PasskeyLoginBody = Type.Object({
  credential: Type.Object(
    {
      ...credentialBase,
      response: Type.Object(
        {
          clientDataJSON: base64url,
          authenticatorData: base64url,
          signature: base64url,
          userHandle: Type.Optional(userHandle),
        },
        open,
      ),
    },
    { ...open, description: 'AuthenticationResponseJSON, as the browser made it.' },
  ),
});
export type PasskeyLoginBody = Static<typeof PasskeyLoginBody>;

const isoTime = Type.String({ format: 'date-time' });
export const Passkey = Type.Object({
  id: Type.String({ description: 'A public handle for the passkey; never its credential id.' }),
  name: Type.String(),
  created_at: isoTime,
  last_used_at: Type.Union([isoTime, Type.Null()], { description: 'The last sign-in with it; null before the first.' }),
});
export const PasskeyList = Type.Object({ passkeys: Type.Array(Passkey, { description: 'Newest first.' }) });
