import { Type } from '@sinclair/typebox';
import { typedDigits } from '../core/typed-digits.js';

/** The bodies and answers of the second step: in the account area, and finishing a sign-in. */

const currentPassword = Type.Optional(
  Type.String({
    maxLength: 1024,
    description:
      'Required when the account has a password: checked as a login is and counted by the failed-login limit.',
  }),
);
const appCode = Type.String({
  [typedDigits]: true,
  pattern: '^[0-9]{6}$',
  description: 'The six digits the authenticator app shows now.',
});
const eitherCode = Type.String({
  minLength: 6,
  maxLength: 20,
  description: 'The six digits the authenticator app shows now, or one of the recovery codes (spent).',
});
export const RecoveryCodes = Type.Object({
  recovery_codes: Type.Array(Type.String(), {
    description: 'Ten single-use codes (`xxxxx-xxxxx`), shown only in this answer: the customer keeps them.',
  }),
});

export const TwoFactorStatus = Type.Object({
  status: Type.Union([Type.Literal('off'), Type.Literal('pending'), Type.Literal('on')]),
  recovery_codes_left: Type.Integer(),
  store: Type.Union([Type.Literal('optional'), Type.Literal('required')]),
});
export const TwoFactorSetupBody = Type.Object({ current_password: currentPassword });
export const TwoFactorSetup = Type.Object({
  secret: Type.String({ description: 'Base32, for typing into an app.' }),
  otpauth_uri: Type.String({ description: "The store's name as the issuer, the identity as the account." }),
  qr_svg: Type.String({ description: 'The URI as a QR code, an SVG document with no script or style.' }),
});
export const TwoFactorConfirmBody = Type.Object({ code: appCode });
export const TwoFactorChangeBody = Type.Object({ current_password: currentPassword, code: eitherCode });
export const TwoFactorOffStatus = Type.Object({ status: Type.Literal('off') });

export const SecondStepBody = Type.Object(
  {
    code: Type.Optional(
      Type.String({
        [typedDigits]: true,
        pattern: '^[0-9]{6}$',
        description: 'The six digits the authenticator app shows now.',
      }),
    ),
    recovery_code: Type.Optional(
      Type.String({
        minLength: 10,
        maxLength: 20,
        description: 'One of the recovery codes (`xxxxx-xxxxx`; case, spaces and hyphens do not matter); single use.',
      }),
    ),
  },
  { description: 'Exactly one of `code` and `recovery_code`.' },
);
