import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import type { Static } from '@sinclair/typebox';
import type * as admin from '../../packages/client/src/admin.js';
import type * as backend from '../../packages/client/src/backend.js';
import type * as client from '../../packages/client/src/index.js';
import type * as introspection from '../../src/http/admin/introspect.js';
import type * as providerAdmin from '../../src/http/admin/providers.js';
import type * as customerSchemas from '../../src/http/admin/customer-schemas.js';
import type * as recordSchemas from '../../src/http/admin/store-records-schemas.js';
import type * as storeSchemas from '../../src/http/admin/store-schemas.js';
import type * as webhookSchemas from '../../src/http/admin/webhook-schemas.js';
import { clientTypesFile, clientTypesSource } from '../../scripts/client-types.js';
import type * as passkeySchemas from '../../src/http/passkeys/schemas.js';
import type * as providerSchemas from '../../src/http/providers/schemas.js';
import type { AdminProblemCode, ProblemCode } from '../../src/http/core/problems.js';
import type * as schemas from '../../src/http/core/schemas.js';
import type * as twoFactorSchemas from '../../src/http/two-factor/schemas.js';

/**
 * The client package cannot import the service, so it carries a copy of the wire types that
 * scripts/client-types.ts writes from the route schemas. The copy must be what the script makes
 * now (checked when the tests run) and must equal TypeBox's own types for those schemas (checked
 * by the type-check: a difference fails `npm run typecheck`).
 */

/** True only when A and B are the same type, optional members and literals included. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Same<A, B> = Equal<A, B> extends true ? true : { differs: [A, B] };
const same = <A, B>(proof: Same<A, B>): Same<A, B> => proof;

// Each line fails the type-check when the client's type and the schema's drift apart.
export const sameTypes = [
  same<client.ProblemCode, ProblemCode>(true),
  same<client.RegisterBody, schemas.RegisterBody>(true),
  same<client.VerifyBody, schemas.VerifyBody>(true),
  same<client.IdentityBody, schemas.IdentityBody>(true),
  same<client.LoginBody, schemas.LoginBody>(true),
  same<client.ResetPasswordBody, schemas.ResetPasswordBody>(true),
  same<client.ChangePasswordBody, schemas.ChangePasswordBody>(true),
  same<client.ProfileBody, schemas.ProfileBody>(true),
  same<client.IdentityChangeBody, schemas.IdentityChangeBody>(true),
  same<client.IdentityConfirmBody, schemas.IdentityConfirmBody>(true),
  same<client.DeleteAccountBody, schemas.DeleteAccountBody>(true),
  same<client.Customer, Static<typeof schemas.Customer>>(true),
  same<client.AuthSession, Static<typeof schemas.AuthSession>>(true),
  same<client.SignInAnswer, Static<typeof schemas.SignInAnswer>>(true),
  same<client.SecondStepBody, Static<typeof twoFactorSchemas.SecondStepBody>>(true),
  same<client.TwoFactorStatus, Static<typeof twoFactorSchemas.TwoFactorStatus>>(true),
  same<client.TwoFactorSetup, Static<typeof twoFactorSchemas.TwoFactorSetup>>(true),
  same<client.TwoFactorChangeBody, Static<typeof twoFactorSchemas.TwoFactorChangeBody>>(true),
  same<client.RecoveryCodes, Static<typeof twoFactorSchemas.RecoveryCodes>>(true),
  same<client.AcceptedStatus, Static<typeof schemas.AcceptedStatus>>(true),
  same<client.PasswordResetStatus, Static<typeof schemas.PasswordResetStatus>>(true),
  same<client.PasswordChangedStatus, Static<typeof schemas.PasswordChangedStatus>>(true),
  same<client.SignedOutStatus, Static<typeof schemas.SignedOutStatus>>(true),
  same<client.Session, Static<typeof schemas.Session>>(true),
  same<client.SessionList, Static<typeof schemas.SessionList>>(true),
  same<client.RevokedStatus, Static<typeof schemas.RevokedStatus>>(true),
  same<client.RevokedCountStatus, Static<typeof schemas.RevokedCountStatus>>(true),
  same<client.DeletedStatus, Static<typeof schemas.DeletedStatus>>(true),
  same<client.AccountExport, Static<typeof schemas.AccountExport>>(true),
  same<client.PlatformInfo, Static<typeof schemas.PlatformInfo>>(true),
  same<client.HealthStatus, Static<typeof schemas.HealthStatus>>(true),
  same<client.ReadinessChecks, Static<typeof schemas.ReadinessChecks>>(true),
  same<client.HealthReady, Static<typeof schemas.HealthReady>>(true),
  same<client.PasskeyCreationOptions, Static<typeof passkeySchemas.PasskeyCreationOptions>>(true),
  same<client.PasskeyRequestOptions, Static<typeof passkeySchemas.PasskeyRequestOptions>>(true),
  same<client.PasskeyRegisterBody, passkeySchemas.PasskeyRegisterBody>(true),
  same<client.PasskeyLoginBody, passkeySchemas.PasskeyLoginBody>(true),
  same<client.Passkey, Static<typeof passkeySchemas.Passkey>>(true),
  same<client.PasskeyList, Static<typeof passkeySchemas.PasskeyList>>(true),
  same<client.ProviderList, Static<typeof providerSchemas.ProviderList>>(true),
  same<client.LinkedProviders, Static<typeof providerSchemas.LinkedProviders>>(true),
  same<client.UnlinkedStatus, Static<typeof providerSchemas.UnlinkedStatus>>(true),
  same<backend.ActiveSession, Static<typeof introspection.ActiveSession>>(true),
  same<client.AdminProblemCode, AdminProblemCode>(true),
  same<admin.Store, Static<typeof storeSchemas.Store>>(true),
  same<admin.CreatedStore, Static<typeof storeSchemas.CreatedStore>>(true),
  same<admin.ChangedStore, Static<typeof storeSchemas.ChangedStore>>(true),
  same<admin.NewStore, storeSchemas.CreateStoreBody>(true),
  same<admin.Provider, Static<typeof providerAdmin.Provider>>(true),
  same<admin.NewProvider, Static<typeof providerAdmin.ProviderBody>>(true),
  same<admin.StorePatch, storeSchemas.StorePatch>(true),
  same<admin.StoreList, Static<typeof storeSchemas.StoreList>>(true),
  same<admin.DeletedStore, Static<typeof storeSchemas.DeletedStore>>(true),
  same<admin.ListedCustomer, Static<typeof customerSchemas.ListedCustomer>>(true),
  same<admin.StaffCustomer, Static<typeof customerSchemas.StaffCustomer>>(true),
  same<admin.CustomerList, Static<typeof customerSchemas.CustomerList>>(true),
  same<admin.NewCustomer, Static<typeof customerSchemas.CreateCustomerBody>>(true),
  same<admin.CustomerPatch, Static<typeof customerSchemas.CustomerPatch>>(true),
  same<backend.InactiveSession, Static<typeof introspection.InactiveSession>>(true),
  same<admin.WebhookEndpoint, Static<typeof webhookSchemas.WebhookEndpoint>>(true),
  same<admin.CreatedWebhook, Static<typeof webhookSchemas.WebhookEndpointWithSecret>>(true),
  same<admin.NewWebhook, Static<typeof webhookSchemas.NewWebhookBody>>(true),
  same<admin.WebhookPatch, Static<typeof webhookSchemas.WebhookPatchBody>>(true),
  same<admin.WebhookDeliveryList, Static<typeof webhookSchemas.DeliveryList>>(true),
  same<admin.AuditRecord, Static<typeof recordSchemas.AuditRecord>>(true),
  same<admin.AuditPage, Static<typeof recordSchemas.AuditPage>>(true),
  same<admin.OutboxEntry, Static<typeof recordSchemas.OutboxEntry>>(true),
  same<admin.OutboxPage, Static<typeof recordSchemas.OutboxPage>>(true),
  same<admin.RetriedMessage, Static<typeof recordSchemas.RetriedMessage>>(true),
  same<admin.OutboxStatus, NonNullable<Static<typeof recordSchemas.OutboxQuery>['status']>>(true),
];

describe("the client package's wire types", () => {
  test('are what scripts/client-types.ts writes from the route schemas now (else: npm run client:types)', () => {
    assert.equal(fs.readFileSync(clientTypesFile, 'utf8'), clientTypesSource());
  });
});
