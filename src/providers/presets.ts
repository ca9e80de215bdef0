/** How a provider answers the browser's return: in the query, or in a form it posts (Apple). */
export type ResponseMode = 'query' | 'form_post';

export type PresetName = 'google' | 'apple' | 'microsoft';
export const presetNames: readonly PresetName[] = ['google', 'apple', 'microsoft'];

export interface Preset {
  issuer: string;
  name: string;
  scopes: string;
  responseMode: ResponseMode;
  /** Apple: the client secret is a JWT signed with the team's private key, made afresh (see apple-secret.ts). */
  secretFromPrivateKey: boolean;
}

/**
 * The providers shoppers know, with their quirks. Apple answers with a form post and sends the
 * name only on the first sign-in, in a `user` field beside the code. Microsoft's preset is its
 * personal-accounts tenant, whose issuer is fixed (the multi-tenant `common` endpoint's is not);
 * Microsoft does not assert `email_verified`, so its sign-ins link or create nothing by email
 * (the nOAuth attack) and only sign in customers who linked it while signed in.
 */
export const presets: Record<PresetName, Preset> = {
  google: {
    issuer: 'https://accounts.google.com',
    name: 'Google',
    scopes: 'openid email profile',
    responseMode: 'query',
    secretFromPrivateKey: false,
  },
  apple: {
    issuer: 'https://appleid.apple.com',
    name: 'Apple',
    scopes: 'openid email name',
    responseMode: 'form_post',
    secretFromPrivateKey: true,
  },
  microsoft: {
    issuer: 'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0',
    name: 'Microsoft',
    scopes: 'openid email profile',
    responseMode: 'query',
    secretFromPrivateKey: false,
  },
};

export const defaultScopes = 'openid email profile';
