import { Type, type Static } from '@sinclair/typebox';

/**
 * The admin API's store resources. The schemas check types and sizes; the values themselves (a
 * host, an origin, a From line) are checked by the store's field rules (store/fields.ts), which the
 * command line shares, so both refuse the same values in the same words.
 */

const time = Type.String({ format: 'date-time' });
const statuses = Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('closed')], {
  description: "While not `active`, the customer API answers the store's shoppers `503 store_unavailable`.",
});
const identityModes = Type.Union([Type.Literal('email'), Type.Literal('phone')], {
  description: 'What shoppers register and sign in with. `phone` needs SMS_WEBHOOK_URL on the deployment.',
});

const settingFields = {
  'auth.customer_verification_required': Type.Boolean({
    description: 'Shoppers must prove their identity with a code before they can sign in.',
  }),
  'auth.sign_in_with_code': Type.Boolean({ description: 'Shoppers may sign in with a code sent to them.' }),
  'auth.sign_in_notices': Type.Boolean({ description: 'A sign-in from a new device sends the shopper a notice.' }),
  'auth.passkeys': Type.Boolean({ description: 'Shoppers may add passkeys and sign in with them.' }),
  'auth.two_factor': Type.Union([Type.Literal('off'), Type.Literal('optional'), Type.Literal('required')], {
    description:
      'A second step (TOTP with recovery codes): `optional`, a shopper may set it up in their account; `required`, a shopper who has it may not turn it off; `off` (default), none is offered or asked for (one set up before is kept, unused, until the store offers it again). A shopper with it signs in by password, code or provider and then a code from their app; a passkey needs none.',
  }),
};

const phoneCountries = Type.Array(Type.String({ minLength: 2, maxLength: 2 }), {
  maxItems: 250,
  description:
    'A phone store: the countries (ISO 3166 alpha-2, such as `DE`) its numbers may be in. A number elsewhere is refused at registration (`422` on `phone`) and sent no message at all, a brake on SMS pumping. Empty: any country.',
});
const botCheckProvider = Type.Union([Type.Literal('turnstile'), Type.Literal('hcaptcha'), Type.Literal('recaptcha')]);
const botCheckOn = Type.Array(
  Type.Union([
    Type.Literal('register'),
    Type.Literal('forgot'),
    Type.Literal('resend'),
    Type.Literal('code_request'),
    Type.Literal('identity_change'),
  ]),
  { maxItems: 5, description: 'The operations whose requests must carry a passed check (`captcha_token`).' },
);
const botCheckFields = {
  provider: botCheckProvider,
  site_key: Type.String({ minLength: 1, maxLength: 200, description: "The widget's public site key." }),
  on: botCheckOn,
};
const botCheckDescription =
  "A bot check (Cloudflare Turnstile, hCaptcha or reCAPTCHA): the sign-in page shows the provider's widget, and the listed operations need its token, verified with the provider before anything else. Null: none.";
const verifyUrl = Type.String({
  minLength: 1,
  maxLength: 500,
  description: "The siteverify address; the provider's own unless set (a proxy, a test's server).",
});
const BotCheckInput = Type.Union(
  [
    Type.Object(
      {
        ...botCheckFields,
        secret: Type.String({
          minLength: 1,
          maxLength: 200,
          description: 'The secret key siteverify takes. Write-only: sealed at rest and never answered.',
        }),
        verify_url: Type.Optional(verifyUrl),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: `${botCheckDescription} Given whole, its secret too: it replaces the one set.` },
);
const BotCheckOutput = Type.Union(
  [
    Type.Object({
      ...botCheckFields,
      verify_url: Type.Union([verifyUrl, Type.Null()]),
      secret_set: Type.Boolean({ description: 'The secret is set; it is never answered.' }),
    }),
    Type.Null(),
  ],
  { description: botCheckDescription },
);

export const StoreSettings = Type.Object({
  ...settingFields,
  'auth.phone_countries': phoneCountries,
  'auth.bot_check': BotCheckOutput,
});
const SettingsInput = Type.Partial(
  Type.Object({ ...settingFields, 'auth.phone_countries': phoneCountries, 'auth.bot_check': BotCheckInput }),
  {
    additionalProperties: false,
    description: 'Any of the settings; those left out keep their value (on create: their default).',
  },
);

const hostsField = Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
  maxItems: 100,
  description:
    'Host names the store answers on: lowercase or not, Unicode or punycode (kept as punycode), without a scheme, port or wildcard. Each belongs to one store.',
});
const originsField = Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
  maxItems: 100,
  description:
    'Storefront origins (scheme, host and port, such as `https://shop.example.com`) allowed to call with credentials, besides `https://` and each host.',
});
const nameField = Type.String({ minLength: 1, maxLength: 120, description: 'Shown to shoppers and in messages.' });
const mailFromField = Type.String({
  minLength: 1,
  maxLength: 400,
  description: "The From line of the store's email, a name and an address: `Acme Shoes <shop@acme.example>`.",
});
const smsSenderField = Type.String({
  minLength: 1,
  maxLength: 32,
  description: 'A label the SMS hook receives as `sender`.',
});
const rpIdField = Type.String({
  minLength: 1,
  maxLength: 253,
  description:
    "The passkeys' relying party ID: a host name the store's hosts are on. Fixed when the store gets its first host (that host, unless given) and changed only by naming another: adding or removing hosts never moves it. Passkeys made for the old one stop signing in, and the answer warns how many.",
});
const cookieDomainField = Type.String({
  minLength: 1,
  maxLength: 253,
  description:
    "The parent domain the store's session and XSRF-TOKEN cookies are set for, so a storefront on a sibling host (shop.example beside auth.shop.example) shares the session: one of the store's hosts or a parent of one, at least two labels, covering no host of another store.",
});
const languagesText =
  "The languages the store's page, problems and messages speak, as language tags the service ships (`en`, `ar`): at least one, duplicates dropped, in the order given.";
const defaultLanguageText =
  'One of `languages`: what a shopper gets whose browser asks for none of them, and whose messages have no language of their own.';
const languageTag = Type.String({ minLength: 1, maxLength: 35 });
const languagesField = (more: string) =>
  Type.Array(languageTag, { maxItems: 50, description: `${languagesText} ${more}` });
const defaultLanguageField = (more: string) =>
  Type.String({ minLength: 1, maxLength: 35, description: `${defaultLanguageText} ${more}` });
const nullable = <T extends ReturnType<typeof Type.String>>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

const brandingText = {
  logo_url:
    "The store's logo, an https:// image URL: shown at the top of the sign-in and account page and in the store's notices (not in its code emails), with the store's name as its text.",
  primary_colour:
    'Buttons and links, as `#RRGGBB`: at least 4.5:1 against white (WCAG AA), else refused with the ratio.',
  accent_colour:
    "The focus ring, as `#RRGGBB`: at least 4.5:1 against the page's text (#1b1b1f), else refused with the ratio.",
  support_url: 'Where shoppers get help, an https:// URL: linked from the page and the emails.',
} as const;
const Branding = Type.Object(
  {
    logo_url: nullable(Type.String(), brandingText.logo_url),
    primary_colour: nullable(Type.String(), brandingText.primary_colour),
    accent_colour: nullable(Type.String(), brandingText.accent_colour),
    support_url: nullable(Type.String(), brandingText.support_url),
  },
  { description: "How the store's page and emails look; null parts are the service's own." },
);
const BrandingInput = Type.Partial(
  Type.Object({
    logo_url: nullable(Type.String({ minLength: 1, maxLength: 2048 }), `${brandingText.logo_url} null: none.`),
    primary_colour: nullable(
      Type.String({ minLength: 1, maxLength: 7 }),
      `${brandingText.primary_colour} null: the service's.`,
    ),
    accent_colour: nullable(
      Type.String({ minLength: 1, maxLength: 7 }),
      `${brandingText.accent_colour} null: the service's.`,
    ),
    support_url: nullable(Type.String({ minLength: 1, maxLength: 2048 }), `${brandingText.support_url} null: none.`),
  }),
  {
    additionalProperties: false,
    description: 'Any of the parts; those left out keep their value, null ones go back to the service’s own.',
  },
);
export type BrandingInput = Static<typeof BrandingInput>;

export const Store = Type.Object({
  id: Type.String({ description: 'Given by the service: a UUID (the first store: `default`).' }),
  slug: Type.String({ description: 'How operators name the store: 3 to 63 of a-z, 0-9 and -, unique.' }),
  name: Type.String(),
  status: statuses,
  identity_mode: identityModes,
  settings: StoreSettings,
  branding: Branding,
  hosts: Type.Array(Type.String(), { description: 'Normalized: lowercase, punycode.' }),
  allowed_origins: Type.Array(Type.String()),
  mail_from: nullable(Type.String(), "The store's From line; null: the deployment's MAIL_FROM under the store's name."),
  sms_sender: nullable(Type.String(), "The SMS hook's `sender`; null: none."),
  webauthn_rp_id: nullable(
    Type.String(),
    "The passkeys' relying party ID, fixed when the store got its first host; null: the deployment's WEBAUTHN_RP_ID.",
  ),
  cookie_domain: nullable(
    Type.String(),
    "The parent domain of the store's cookies; null: the deployment's COOKIE_DOMAIN, else host-only cookies.",
  ),
  languages: Type.Array(Type.String(), { description: `${languagesText} A store given none speaks \`["en"]\`.` }),
  default_language: Type.String({ description: defaultLanguageText }),
  updated_at: time,
});

export const ChangedStore = Type.Composite(
  [
    Store,
    Type.Object({
      warnings: Type.Optional(
        Type.Array(Type.String(), {
          description: 'What the change does besides: passkeys made for a relying party ID it moved away from.',
        }),
      ),
    }),
  ],
  { description: 'The store as changed, as GET answers it.' },
);

export const CreatedStore = Type.Composite(
  [
    Store,
    Type.Object({
      warnings: Type.Optional(
        Type.Array(Type.String(), {
          description:
            'What the creation changed besides: the first store, while it was the only one and had no host, answered on every host, and now answers on none.',
        }),
      ),
    }),
  ],
  { description: 'The store made, as GET answers it.' },
);

export const CreateStoreBody = Type.Object(
  {
    slug: Type.String({ maxLength: 63, description: '3 to 63 of a-z, 0-9 and -; unique among live stores.' }),
    name: nameField,
    identity_mode: Type.Optional(identityModes),
    status: Type.Optional(statuses),
    hosts: Type.Optional(hostsField),
    settings: Type.Optional(SettingsInput),
    branding: Type.Optional(BrandingInput),
    allowed_origins: Type.Optional(originsField),
    mail_from: Type.Optional(nullable(mailFromField, mailFromField.description!)),
    sms_sender: Type.Optional(nullable(smsSenderField, smsSenderField.description!)),
    webauthn_rp_id: Type.Optional(nullable(rpIdField, rpIdField.description!)),
    cookie_domain: Type.Optional(nullable(cookieDomainField, `${cookieDomainField.description} Default: none.`)),
    languages: Type.Optional(languagesField('Default: `["en"]`.')),
    default_language: Type.Optional(defaultLanguageField('Default: the first of `languages`.')),
  },
  { additionalProperties: false, description: 'A new store: `slug` and `name`, and any of its other fields.' },
);
export type CreateStoreBody = Static<typeof CreateStoreBody>;

export const StorePatch = Type.Object(
  {
    name: Type.Optional(nameField),
    identity_mode: Type.Optional(identityModes),
    status: Type.Optional(statuses),
    settings: Type.Optional(SettingsInput),
    branding: Type.Optional(BrandingInput),
    allowed_origins: Type.Optional(
      Type.Union([originsField, Type.Null()], { description: `${originsField.description} null: none.` }),
    ),
    mail_from: Type.Optional(nullable(mailFromField, `${mailFromField.description} null: the deployment's.`)),
    sms_sender: Type.Optional(nullable(smsSenderField, `${smsSenderField.description} null: none.`)),
    webauthn_rp_id: Type.Optional(nullable(rpIdField, `${rpIdField.description} null: the deployment's.`)),
    cookie_domain: Type.Optional(
      nullable(cookieDomainField, `${cookieDomainField.description} null: host-only cookies (or COOKIE_DOMAIN's).`),
    ),
    languages: Type.Optional(
      languagesField(
        'Replaces the list, which must hold the default language unless `default_language` is given with it.',
      ),
    ),
    default_language: Type.Optional(
      defaultLanguageField("Given alone, it must be one of the store's current languages."),
    ),
  },
  {
    additionalProperties: false,
    description:
      'A JSON merge patch (RFC 7396) of the store: the fields sent change, those left out keep their value, and null clears `allowed_origins`, `mail_from`, `sms_sender`, `webauthn_rp_id` and `cookie_domain`. `slug` and `id` do not change; hosts change through `/stores/{id}/hosts`. Any other field is refused, so a typo never passes for a change.',
  },
);
export type StorePatch = Static<typeof StorePatch>;

export const StoreList = Type.Object({
  stores: Type.Array(Store),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` for the next page; null on the last page.',
  }),
});

export const DeletedStore = Type.Object({
  id: Type.String(),
  slug: Type.String(),
  status: Type.Literal('deleted', {
    description:
      'The store no longer resolves and its slug and hosts are free; what it held is erased in the background, in batches, resuming after a restart.',
  }),
});

export const HostBody = Type.Object(
  { host: Type.String({ minLength: 1, maxLength: 253, description: hostsField.description! }) },
  { additionalProperties: false },
);
export type HostBody = Static<typeof HostBody>;
