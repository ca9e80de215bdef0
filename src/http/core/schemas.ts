import { Type, type Static } from '@sinclair/typebox';
import { maxNameLength } from '../../auth/rules/fields.js';
import { maxIdentityLength } from '../../auth/rules/identity.js';
import { maxPasswordLength } from '../../auth/rules/password.js';
import { typedDigits } from './typed-digits.js';

/** Caps a raw name before trimming; the name's own limit (maxNameLength) applies after it. */
export const maxRawNameLength = 255;

const identityField = Type.String({
  minLength: 1,
  maxLength: maxIdentityLength,
  description: "The account's email address or phone number (E.164), by the store's identity mode.",
});
// Typed on an Arabic keyboard, a code's digits are Arabic-Indic: read as ASCII before the pattern.
const codeField = Type.String({
  [typedDigits]: true,
  pattern: '^[0-9]{6}$',
  description:
    'The six-digit code that was sent; Arabic-Indic (U+0660–U+0669) and Extended Arabic-Indic (U+06F0–U+06F9) digits are read as ASCII digits.',
});

/** Long enough for every bot check provider's token (reCAPTCHA's run to a few thousand characters). */
export const maxCaptchaTokenLength = 8192;

const captchaTokenField = Type.Optional(
  Type.String({
    maxLength: maxCaptchaTokenLength,
    description:
      "The token of the store's bot check widget, when the store's `auth.bot_check` lists the operation (or send `X-Captcha-Token`).",
  }),
);

const localeField = Type.String({
  maxLength: 35,
  description:
    "The language of the customer's messages: one of the store's languages (`en`, `ar`, …). Left out at registration: the store language `Accept-Language` asks for, if any.",
});

export const RegisterBody = Type.Object({
  // The name's limit applies after trimming (in the domain); this bound only caps the raw input.
  name: Type.String({
    maxLength: maxRawNameLength,
    description: `Up to ${maxNameLength} characters once trimmed; no control characters.`,
  }),
  email: Type.Optional(
    Type.String({
      maxLength: maxIdentityLength,
      description: 'Required on a store whose identity mode is email; refused on a phone store.',
    }),
  ),
  phone: Type.Optional(
    Type.String({
      maxLength: maxIdentityLength,
      description: 'E.164; required on a store whose identity mode is phone; refused on an email store.',
    }),
  ),
  password: Type.String({
    maxLength: maxPasswordLength,
    description: 'At least 8 characters with a letter and a number; not a common password.',
  }),
  password_confirmation: Type.String({ maxLength: maxPasswordLength, description: 'Must equal password.' }),
  locale: Type.Optional(localeField),
  captcha_token: captchaTokenField,
});
export type RegisterBody = Static<typeof RegisterBody>;

export const VerifyBody = Type.Object({ identity: identityField, code: codeField });
export type VerifyBody = Static<typeof VerifyBody>;

export const IdentityBody = Type.Object({ identity: identityField, captcha_token: captchaTokenField });
export type IdentityBody = Static<typeof IdentityBody>;

export const LoginBody = Type.Object({
  identity: identityField,
  password: Type.String({ minLength: 1, maxLength: maxPasswordLength }),
});
export type LoginBody = Static<typeof LoginBody>;

// A new password and its confirmation, as reset and change take them.
const newPasswordFields = {
  password: Type.String({
    maxLength: maxPasswordLength,
    description: 'The new password, by the same rules as at registration.',
  }),
  password_confirmation: Type.String({ maxLength: maxPasswordLength }),
};

export const ResetPasswordBody = Type.Object({
  identity: identityField,
  code: codeField,
  ...newPasswordFields,
});
export type ResetPasswordBody = Static<typeof ResetPasswordBody>;

export const ChangePasswordBody = Type.Object({
  current_password: Type.String({
    minLength: 1,
    maxLength: maxPasswordLength,
    description: 'The password the account has now.',
  }),
  ...newPasswordFields,
});
export type ChangePasswordBody = Static<typeof ChangePasswordBody>;

export const ProfileBody = Type.Object({
  name: Type.Optional(
    Type.String({
      maxLength: maxRawNameLength,
      description: `Up to ${maxNameLength} characters once trimmed; no control characters. Required unless \`locale\` is sent.`,
    }),
  ),
  locale: Type.Optional(
    Type.Union([localeField, Type.Null()], {
      description:
        "The language of the customer's messages: one of the store's languages, or null for the store's default.",
    }),
  ),
});
export type ProfileBody = Static<typeof ProfileBody>;

export const IdentityChangeBody = Type.Object({
  email: Type.Optional(
    Type.String({
      maxLength: maxIdentityLength,
      description: 'The new email address; required on an email store and refused on a phone store.',
    }),
  ),
  phone: Type.Optional(
    Type.String({
      maxLength: maxIdentityLength,
      description: 'The new phone number (E.164); required on a phone store and refused on an email store.',
    }),
  ),
  current_password: Type.String({
    minLength: 1,
    maxLength: maxPasswordLength,
    description: 'The password the account has now.',
  }),
  captcha_token: captchaTokenField,
});
export type IdentityChangeBody = Static<typeof IdentityChangeBody>;

export const IdentityConfirmBody = Type.Object({ code: codeField });
export type IdentityConfirmBody = Static<typeof IdentityConfirmBody>;

export const Customer = Type.Object({
  id: Type.String(),
  name: Type.String(),
  identity: Type.Object({
    type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
    value: Type.String({
      description: 'Lowercased; an email address with an internationalized domain shows the domain in Unicode.',
    }),
    verified_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  }),
  has_password: Type.Boolean({
    description:
      'Whether the account has a password: not when a sign-in provider made it, or a first sign-in with a code or a provider retired the unproven one. Without one, password change, identity change and deletion refuse every current_password until POST /password/forgot and POST /password/reset set one.',
  }),
});

/** The language of a customer's messages, as their export and the operators' views show it. */
export const customerLocale = Type.Union([Type.String(), Type.Null()], {
  description:
    "The language of the customer's messages, recorded at registration or set with POST /profile; null: the store's default language.",
});

export const AuthSession = Type.Object({ auth_type: Type.Literal('session'), customer: Customer });
export const TwoFactorRequired = Type.Object(
  {
    auth_type: Type.Literal('two_factor_required'),
    methods: Type.Array(Type.Union([Type.Literal('totp'), Type.Literal('recovery_code')])),
  },
  {
    description:
      'The first step was right and the customer has a second step: no session yet. An HttpOnly cookie holds the pending sign-in for 5 minutes; finish it with `POST /two-factor/verify`.',
  },
);
/** What a password, code or provider sign-in answers: a session, or a second step to take first. */
export const SignInAnswer = Type.Union([AuthSession, TwoFactorRequired]);
export const AcceptedStatus = Type.Object({ status: Type.Literal('accepted') });
export const PasswordResetStatus = Type.Object({ status: Type.Literal('password_reset') });
export const PasswordChangedStatus = Type.Object({ status: Type.Literal('password_changed') });
export const SignedOutStatus = Type.Object({ status: Type.Literal('signed_out') });
export const SessionClient = Type.Object({
  user_agent: Type.Union([Type.String({ maxLength: 256 }), Type.Null()], {
    description: 'What the browser sent at login, cut to 256 characters; null when it sent none.',
  }),
  device: Type.String({
    description: 'The device in a few words, e.g. `Firefox on Windows`: browser and system, no versions.',
  }),
  address: Type.Union([Type.String(), Type.Null()], {
    description: 'The login address masked to its /24 (IPv4) or /48 (IPv6), e.g. `203.0.113.0/24`.',
  }),
});
export const Session = Type.Object({
  id: Type.String({ description: 'A public handle for the session; never the cookie value or its hash.' }),
  current: Type.Boolean({ description: 'Whether this is the session of the request.' }),
  created_at: Type.String({ format: 'date-time' }),
  last_seen_at: Type.String({ format: 'date-time', description: 'May lag by up to 5 minutes.' }),
  expires_at: Type.String({ format: 'date-time' }),
  client: SessionClient,
});
export const SessionList = Type.Object({ sessions: Type.Array(Session, { description: 'Newest first.' }) });
export const RevokedStatus = Type.Object({ status: Type.Literal('revoked') });
export const RevokedCountStatus = Type.Object({ status: Type.Literal('revoked'), count: Type.Integer({ minimum: 0 }) });
export const DeleteAccountBody = Type.Object({
  current_password: Type.String({
    minLength: 1,
    maxLength: maxPasswordLength,
    description: 'Checked like a login; counts toward the failed-login limit.',
  }),
});
export type DeleteAccountBody = Static<typeof DeleteAccountBody>;
export const DeletedStatus = Type.Object({ status: Type.Literal('deleted') });
const isoTime = Type.String({ format: 'date-time' });
export const AccountExport = Type.Object(
  {
    exported_at: isoTime,
    customer: Type.Object({
      ...Customer.properties,
      locale: customerLocale,
      created_at: isoTime,
      two_factor: Type.Boolean({
        description: 'A second step is on (its secret and recovery codes are never exported).',
      }),
    }),
    sessions: Type.Array(Session, { description: 'The live sessions, newest first, as `GET /sessions` lists them.' }),
    known_devices: Type.Array(
      Type.Object({ family: Type.String(), masked_address: Type.String(), last_seen_at: isoTime }),
      { description: 'The devices remembered for new-sign-in notices (90 days), most recent first.' },
    ),
    passkeys: Type.Array(
      Type.Object({
        id: Type.String(),
        name: Type.String(),
        created_at: isoTime,
        last_used_at: Type.Union([isoTime, Type.Null()]),
      }),
      { description: 'The passkeys that can sign in to the account, newest first (never their keys).' },
    ),
    provider_links: Type.Array(
      Type.Object({
        provider: Type.String(),
        email: Type.Union([Type.String(), Type.Null()]),
        linked_at: isoTime,
      }),
      { description: 'The sign-in providers linked to the account, oldest first.' },
    ),
    audit_events: Type.Array(
      Type.Object({
        occurred_at: isoTime,
        event: Type.String(),
        client_address: Type.Union([Type.String(), Type.Null()]),
        details: Type.Record(Type.String(), Type.String()),
      }),
      { description: 'Newest first.' },
    ),
  },
  { description: 'Everything kept about the signed-in customer, and nothing about anyone else.' },
);
export const PlatformInfo = Type.Object({ name: Type.String(), api_version: Type.String() });
export const HealthStatus = Type.Object({ status: Type.Literal('ok') });
export const ReadinessChecks = Type.Object({
  database: Type.Boolean(),
  cache: Type.Boolean(),
  search: Type.Boolean(),
  store: Type.Boolean(),
});
export const HealthReady = Type.Object({
  status: Type.String(),
  checks: ReadinessChecks,
  details: Type.Optional(Type.Object({ store_id: Type.String(), store_status: Type.String() })),
});
