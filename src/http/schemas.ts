import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { problemCatalogue, type ProblemCode } from './problems.js';

const identityField = Type.String({
  minLength: 1,
  maxLength: 254,
  description: "The account's email address or phone number (E.164), by the store's identity mode.",
});
const codeField = Type.String({ pattern: '^[0-9]{6}$', description: 'The six-digit code that was sent.' });

export const RegisterBody = Type.Object({
  // The 120 limit applies after trimming (in the domain); this bound only caps the raw input.
  name: Type.String({ maxLength: 255, description: 'Up to 120 characters once trimmed; no control characters.' }),
  email: Type.Optional(Type.String({ maxLength: 254, description: 'Send on a store whose identity mode is email.' })),
  phone: Type.Optional(
    Type.String({ maxLength: 254, description: 'E.164; send on a store whose identity mode is phone.' }),
  ),
  password: Type.String({
    maxLength: 255,
    description: 'At least 8 characters with a letter and a number; not a common password.',
  }),
  password_confirmation: Type.String({ maxLength: 255, description: 'Must equal password.' }),
});
export type RegisterBody = Static<typeof RegisterBody>;

export const VerifyBody = Type.Object({ identity: identityField, code: codeField });
export type VerifyBody = Static<typeof VerifyBody>;

export const IdentityBody = Type.Object({ identity: identityField });
export type IdentityBody = Static<typeof IdentityBody>;

export const LoginBody = Type.Object({
  identity: identityField,
  password: Type.String({ minLength: 1, maxLength: 255 }),
});
export type LoginBody = Static<typeof LoginBody>;

export const ResetPasswordBody = Type.Object({
  identity: identityField,
  code: codeField,
  password: Type.String({ maxLength: 255, description: 'The new password, by the same rules as at registration.' }),
  password_confirmation: Type.String({ maxLength: 255 }),
});
export type ResetPasswordBody = Static<typeof ResetPasswordBody>;

export const Customer = Type.Object({
  id: Type.String(),
  name: Type.String(),
  identity: Type.Object({
    type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
    value: Type.String(),
    verified_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  }),
});

export const AuthSession = Type.Object({ auth_type: Type.Literal('session'), customer: Customer });
export const AcceptedStatus = Type.Object({ status: Type.Literal('accepted') });
export const PasswordResetStatus = Type.Object({ status: Type.Literal('password_reset') });
export const SignedOutStatus = Type.Object({ status: Type.Literal('signed_out') });
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

function problemSchema(codes: ProblemCode[]): TSchema {
  return Type.Object(
    {
      type: Type.String({ examples: ['about:blank'] }),
      title: Type.String(),
      status: Type.Integer(),
      code: Type.Unsafe<ProblemCode>({ type: 'string', enum: codes }),
      detail: Type.String(),
      request_id: Type.String({ description: 'Equals the X-Request-ID header.' }),
      errors: Type.Optional(
        Type.Record(Type.String(), Type.Array(Type.String()), {
          description: 'validation_failed only: each failing field (by its request name, or `body`) with its messages.',
        }),
      ),
      checks: Type.Optional(ReadinessChecks),
      details: Type.Optional(Type.Object({ store_id: Type.String(), store_status: Type.String() })),
    },
    { description: 'RFC 9457 problem document' },
  );
}

/** Response entries for the problem documents a route can answer with, grouped by status. */
export function problemResponses(...codes: ProblemCode[]) {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of new Set(codes)) {
    const status = problemCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      {
        description: list.map((code) => `\`${code}\`: ${problemCatalogue[code].detail}`).join(' '),
        content: { 'application/problem+json': { schema: problemSchema(list) } },
      },
    ]),
  );
}

/** What any customer route can answer before it runs: the gate, CSRF, limits, dependencies. */
export const customerProblems: ProblemCode[] = [
  'untrusted_origin',
  'csrf_token_mismatch',
  'rate_limited',
  'store_unavailable',
  'service_unavailable',
  'internal_error',
];
/** What any route with a JSON body can answer besides. */
export const bodyProblems: ProblemCode[] = [
  ...customerProblems,
  'payload_too_large',
  'unsupported_media_type',
  'validation_failed',
];
