/**
 * oidc-provider ships no type declarations: the little of it that openid-provider.ts uses, so the
 * tests' provider typechecks under `strict`.
 */
declare module 'oidc-provider' {
  import type { Server } from 'node:http';

  export interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export interface Configuration {
    findAccount?(context: unknown, id: string): Promise<Account | undefined>;
    [setting: string]: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    readonly IdToken: { prototype: { issue(...args: unknown[]): Promise<string> } };
    listen(port: number): Server;
    on(event: string, listener: (...args: never[]) => void): this;
  }
}
