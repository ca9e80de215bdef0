import { Type } from '@sinclair/typebox';

/** A provider id as stores name them (see checkProvider). */
export const ProviderParams = Type.Object({
  id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,31}$', description: 'The provider id, such as google' }),
});

export const ProviderList = Type.Object({
  providers: Type.Array(
    Type.Object({
      id: Type.String({ description: 'For the start and callback paths' }),
      name: Type.String({ description: 'For the "Continue with …" button' }),
    }),
  ),
});

export const ProviderStartQuery = Type.Object({
  return_to: Type.Optional(
    Type.String({
      maxLength: 2048,
      description:
        "Where the browser goes back to: a path of this host, or a URL on one of the store's origins; anything else is replaced by /.",
    }),
  ),
  link: Type.Optional(
    Type.Union([Type.Literal('1'), Type.Literal('true')], {
      description: "Link the provider's account to the signed-in customer instead of signing in.",
    }),
  ),
  xsrf_token: Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        'With `link`: the XSRF-TOKEN of the session, as POSTs send it in X-XSRF-TOKEN (a link cannot be started from another site).',
    }),
  ),
});

/** The provider's answer: open, since providers add parameters of their own (Google's `authuser`, say). */
export const ProviderCallbackParameters = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 512 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
    user: Type.Optional(Type.String({ maxLength: 4096, description: "Apple's name, on the first sign-in only" })),
  },
  { additionalProperties: true },
);

export const Redirect = Type.Null({ description: 'A redirect: see the Location header.' });

export const LinkedProviders = Type.Object({
  links: Type.Array(
    Type.Object({
      provider: Type.String(),
      name: Type.Union([Type.String(), Type.Null()], {
        description: "The provider's display name; null when the store no longer offers it",
      }),
      email: Type.Union([Type.String(), Type.Null()], { description: 'The email the provider gave, lowercased' }),
      linked_at: Type.String({ format: 'date-time' }),
    }),
  ),
});

export const UnlinkedStatus = Type.Object({ status: Type.Literal('unlinked') });
