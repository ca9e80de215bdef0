import { Type, type Static } from '@sinclair/typebox';
import { Customer, customerLocale } from '../core/schemas.js';

/** The admin API's words for a store's customers, as the platform's staff see and change them. */

const date = Type.String({ format: 'date-time' });
const nullable = <T extends ReturnType<typeof Type.String>>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

export const customerStatuses = ['active', 'unverified', 'blocked'] as const;

export const CustomerListQuery = Type.Object(
  {
    query: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        description:
          'The start of the email or phone number (as stored: an email in lower case, a phone in E.164 with its `+`) or of the name (any case). Identity matches come first, in identity order, then name matches, in name order.',
      }),
    ),
    identity: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        description: 'Exactly this email or phone number, as the customer would type it (normalized as at sign-in).',
      }),
    ),
    status: Type.Optional(
      Type.Union(
        customerStatuses.map((status) => Type.Literal(status)),
        { description: '`blocked` (a block holds now), `active` (proven, not blocked), `unverified` (not blocked).' },
      ),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 1000, description: "A page's `next_cursor`." })),
    limit: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,3}$', description: 'Customers per page, 1 to 500 (default 100).' }),
    ),
  },
  { additionalProperties: false },
);

const Block = Type.Object({
  reason: Type.String(),
  blocked_at: date,
  until: nullable(date, 'When it ends by itself; null: until lifted.'),
});

/** A customer in a list: who they are and where their account stands. */
export const ListedCustomer = Type.Composite([
  Customer,
  Type.Object({
    status: Type.Union(
      customerStatuses.map((status) => Type.Literal(status)),
      { description: 'Whether a block holds now, else whether the identity is proven.' },
    ),
    locale: customerLocale,
    external_id: nullable(Type.String(), "The customer's id in the store's own systems."),
    created_at: date,
    block: Type.Union([Block, Type.Null()], { description: 'The block that holds now; null when none does.' }),
  }),
]);

/** One customer with what support asks about. */
export const StaffCustomer = Type.Composite([
  ListedCustomer,
  Type.Object({
    last_sign_in_at: nullable(date, 'The last sign-in the audit trail still remembers (its retention).'),
    session_count: Type.Integer({ description: 'Live sessions (signed in, not expired).' }),
    passkey_count: Type.Integer(),
    two_factor: Type.Boolean({
      description: 'A second step (TOTP) is on: sign-ins by password, code or provider ask for it.',
    }),
    providers: Type.Array(
      Type.Object({ provider: Type.String(), email: nullable(Type.String(), ''), linked_at: date }),
      {
        description: 'The sign-in providers linked to the account.',
      },
    ),
  }),
]);
export type StaffCustomer = Static<typeof StaffCustomer>;

export const CustomerList = Type.Object({
  customers: Type.Array(ListedCustomer),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` (with the same `query` and `status`) for the next page; null on the last page.',
  }),
});

export const CreateCustomerBody = Type.Object(
  {
    identity: Type.String({
      minLength: 1,
      maxLength: 320,
      description: 'An email or phone number, as the store signs in.',
    }),
    name: Type.String({ minLength: 1, maxLength: 1000 }),
    verified: Type.Optional(
      Type.Boolean({ description: 'Staff vouch that the customer controls the identity (default false).' }),
    ),
    password_hash: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: 'A hash in a format an import takes (argon2, bcrypt, scrypt, PBKDF2, phpass…); none: no password.',
      }),
    ),
    invite: Type.Optional(
      Type.Boolean({ description: 'Without a password hash: send a set-password code that lives a week.' }),
    ),
    locale: Type.Optional(Type.String({ maxLength: 35 })),
    external_id: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type CreateCustomerBody = Static<typeof CreateCustomerBody>;

export const CustomerPatch = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 1000 })),
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    phone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    verified: Type.Optional(Type.Boolean()),
    locale: Type.Optional(Type.Union([Type.String({ maxLength: 35 }), Type.Null()])),
    external_id: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CustomerPatch = Static<typeof CustomerPatch>;

export const BlockBody = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'Why, for the trail and the event; never shown to the customer.',
    }),
    until: Type.Optional(
      Type.String({ format: 'date-time', description: 'When the block ends by itself; none: until lifted.' }),
    ),
  },
  { additionalProperties: false },
);
export type BlockBody = Static<typeof BlockBody>;

export const RevokedSessions = Type.Object({ count: Type.Integer({ description: 'Sessions ended.' }) });

export const DeletedCustomer = Type.Object({
  id: Type.String(),
  status: Type.Literal('deleted', {
    description:
      'Erased as a customer’s own deletion: sessions, codes, passkeys, links, messages; the audit trail keeps the id without the identity. An `account_deleted` notice goes to the identity.',
  }),
});
