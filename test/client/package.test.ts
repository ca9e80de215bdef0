import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { useClientService } from '../helpers/client-service.js';
import { repoRoot } from '../helpers/service-process.js';

/**
 * The client as a user gets it: packages/client built (as `npm run build:client` builds it) and
 * packed by `npm pack`, the tarball installed offline into an empty project outside this
 * repository, and used from there by plain Node ESM against a running service, and by a
 * TypeScript program that sees no other types.
 */

const run = promisify(execFile);
const clientFolder = path.join(repoRoot, 'packages', 'client');
const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');

/** The environment without what an enclosing `npm test` set for its scripts (npm_config_…), which would steer these runs. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

/** What the consumer does with the installed package, printing what it saw as one JSON line. */
const consumer = `
import { createStorefrontAuthClient, StorefrontAuthError } from '@storefront-auth/client';
import { createIntrospectionClient } from '@storefront-auth/client/backend';
import { createAdminClient } from '@storefront-auth/client/admin';

const [baseUrl, adminUrl, token, adminToken] = process.argv.slice(2);
const seen = {};
const auth = createStorefrontAuthClient({ baseUrl });
seen.platform = await auth.platform();
const body = { name: 'Ada', email: 'packed@example.com', password: 'analytical engine 1843', password_confirmation: 'analytical engine 1843' };
const customer = await auth.register(body);
seen.identity = customer.identity.value;
seen.tokenFetched = auth.cookies().has('XSRF-TOKEN');
await auth.login({ identity: body.email, password: body.password });
seen.session = (await auth.session()).customer.id === customer.id;
try {
  await auth.register(body);
} catch (error) {
  seen.refusal = { typed: error instanceof StorefrontAuthError, status: error.status, code: error.code };
}
// A backend acting for this shopper: their cookies in, what the service sets handed back.
const cookie = [...auth.cookies()].map(([name, value]) => name + '=' + value).join('; ');
const relayed = [];
const backend = createStorefrontAuthClient({ baseUrl, cookie, onSetCookie: (lines) => relayed.push(...lines) });
seen.forwarded = (await backend.session()).customer.id === customer.id;
// The shop's backend asking the admin listener who the shopper is, before and after the logout.
const introspection = createIntrospectionClient({ baseUrl: adminUrl, token });
const before = await introspection.introspect(cookie);
seen.introspected = before.active === true && before.customer.id === customer.id && before.store.status;
await backend.logout();
seen.relayedOnLogout = relayed.some((line) => line.startsWith('storefront_session='));
seen.inactiveAfterLogout = (await introspection.introspect(cookie)).active === false;
seen.noCookieNoCall = (await introspection.introspect(undefined)).active === false;
// The platform's backend: a store made twice with one key is one store; a taken slug is typed.
const admin = createAdminClient({ baseUrl: adminUrl, token: adminToken });
// A sign-in provider added for the only store (answering on every host): its shoppers see its button, the secret stays in.
const provider = await admin.addProvider('default', { id: 'google', preset: 'google', client_id: 'c', client_secret: 'hidden' });
seen.provider = [provider.id, provider.secret, (await admin.listProviders('default')).length];
seen.buttons = (await auth.listProviders()).providers;
seen.startUrl = auth.providerStartUrl('google', { returnTo: '/account' }).endsWith('/api/v1/customer/auth/providers/google/start?return_to=%2Faccount');
await admin.removeProvider('default', 'google');
const made = await admin.createStore({ slug: 'packed', name: 'Packed', hosts: ['packed.example'] }, { idempotencyKey: 'k-1' });
const again = await admin.createStore({ slug: 'packed', name: 'Packed', hosts: ['packed.example'] }, { idempotencyKey: 'k-1' });
seen.createdOnce = made.id === again.id;
try {
  await admin.createStore({ slug: 'packed', name: 'Other' });
} catch (error) {
  seen.adminRefusal = { typed: error instanceof StorefrontAuthError, status: error.status, code: error.code };
}
const slugs = [];
for await (const store of admin.allStores({ pageSize: 1 })) slugs.push(store.slug);
seen.stores = slugs;
seen.paused = (await admin.changeStore('packed', { status: 'paused' })).status;
seen.deleted = (await admin.deleteStore(made.id)).status;
console.log(JSON.stringify(seen));
`;

const typedConsumer = `
import { createStorefrontAuthClient, StorefrontAuthError, type Customer, type ProblemCode } from '@storefront-auth/client';
import { createAdminClient, type Store } from '@storefront-auth/client/admin';

const auth = createStorefrontAuthClient({ baseUrl: 'https://shop.example', cookie: 'a=1', onSetCookie: () => {} });
export async function register(): Promise<string> {
  const customer: Customer = await auth.register({ name: 'A', email: 'a@example.com', password: 'p4ssword', password_confirmation: 'p4ssword' });
  return customer.identity.verified_at ?? 'unverified';
}
// @ts-expect-error a login without its password is refused by the types
export const incomplete = () => auth.login({ identity: 'a@example.com' });
export const code: ProblemCode = 'rate_limited';
export const isOffline = (error: unknown) => error instanceof StorefrontAuthError && error.code === 'network_error';
export const admin = createAdminClient({ baseUrl: 'http://127.0.0.1:3001', token: 't' });
export const made: Promise<Store> = admin.createStore({ slug: 'a-shop', name: 'A' }, { idempotencyKey: 'k' });
// @ts-expect-error a patch of a field the store does not have is refused by the types
export const typo = () => admin.changeStore('a-shop', { nmae: 'B' });
export const taken = (error: StorefrontAuthError) => error.code === 'host_taken';
`;

const introspectionToken = 'introspection-token-of-the-shop-backend-0123456789';
const adminToken = 'admin-token-of-the-store-platform-backend-0123456789';

describe('the client package, packed and installed as a user installs it', { timeout: 180_000 }, () => {
  const running = useClientService('sfa-client-package-', {
    INTROSPECTION_TOKENS: introspectionToken,
    ADMIN_TOKENS: adminToken,
    ADMIN_PORT: '0',
  });
  let scratch: string;
  let tarball: string;
  let project: string;
  let installOutput: string;

  before(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-client-pack-'));
    await run(process.execPath, [tsc, '-p', path.join(clientFolder, 'tsconfig.json')]);
    await run('npm', ['pack', '--pack-destination', scratch, '--offline'], { cwd: clientFolder, env: npmEnv() });
    const packed = fs.readdirSync(scratch).filter((name) => name.endsWith('.tgz'));
    assert.equal(packed.length, 1, `npm pack made one tarball: ${packed.join(', ')}`);
    tarball = path.join(scratch, packed[0]!);
    project = path.join(scratch, 'shop');
    fs.mkdirSync(project);
    fs.writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'shop', version: '1.0.0', private: true, type: 'module' }),
    );
    // Offline: a package without dependencies installs from its tarball alone.
    const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], {
      cwd: project,
      env: npmEnv(),
    });
    installOutput = installed.stdout + installed.stderr;
  });

  after(() => {
    if (scratch !== undefined) fs.rmSync(scratch, { recursive: true, force: true });
  });

  test('the tarball holds the built module, its types, the README and package.json, nothing else', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    assert.deepEqual(stdout.trim().split('\n').sort(), [
      'package/README.md',
      'package/dist/admin-customers.d.ts',
      'package/dist/admin-customers.js',
      'package/dist/admin-records.d.ts',
      'package/dist/admin-records.js',
      'package/dist/admin-webhooks.d.ts',
      'package/dist/admin-webhooks.js',
      'package/dist/admin.d.ts',
      'package/dist/admin.js',
      'package/dist/answers.d.ts',
      'package/dist/answers.js',
      'package/dist/api-types.d.ts',
      'package/dist/api-types.js',
      'package/dist/backend.d.ts',
      'package/dist/backend.js',
      'package/dist/index.d.ts',
      'package/dist/index.js',
      'package/dist/webhooks.d.ts',
      'package/dist/webhooks.js',
      'package/package.json',
    ]);
  });

  test('its manifest has no scripts, and installing it prints no npm warning', () => {
    const manifest = JSON.parse(
      fs.readFileSync(path.join(project, 'node_modules', '@storefront-auth', 'client', 'package.json'), 'utf8'),
    );
    // Not prepare, install or postinstall, nor one that needs this repository or its devDependencies.
    assert.deepEqual(manifest.scripts ?? {}, {}, 'the packed manifest has no scripts');
    assert.doesNotMatch(installOutput, /npm warn/i);
  });

  test('installing it brings no other package', () => {
    const modules = path.join(project, 'node_modules');
    assert.deepEqual(
      fs.readdirSync(modules).filter((name) => name !== '.package-lock.json'),
      ['@storefront-auth'],
    );
    assert.deepEqual(fs.readdirSync(path.join(modules, '@storefront-auth')), ['client']);
    const manifest = JSON.parse(
      fs.readFileSync(path.join(modules, '@storefront-auth', 'client', 'package.json'), 'utf8'),
    );
    assert.equal(manifest.dependencies, undefined, 'no dependencies');
    assert.equal(manifest.peerDependencies, undefined, 'no peer dependencies');
    assert.equal(manifest.type, 'module');
    assert.equal(manifest.exports['.'].types, './dist/index.d.ts');
    assert.equal(manifest.exports['./backend'].types, './dist/backend.d.ts');
    assert.equal(manifest.exports['./admin'].types, './dist/admin.d.ts');
  });

  test('plain Node ESM imports it and registers, signs in and reads the session on a running service', async () => {
    fs.writeFileSync(path.join(project, 'consumer.mjs'), consumer);
    const { service } = running;
    assert.ok(service.adminUrl, 'the admin listener is up');
    const { stdout } = await run(
      process.execPath,
      ['consumer.mjs', service.url, service.adminUrl, introspectionToken, adminToken],
      {
        cwd: project,
      },
    );
    assert.deepEqual(JSON.parse(stdout), {
      platform: { name: 'Storefront', api_version: 'v1' },
      identity: 'packed@example.com',
      tokenFetched: true,
      session: true,
      refusal: { typed: true, status: 422, code: 'identity_unavailable' },
      forwarded: true,
      introspected: 'active',
      relayedOnLogout: true,
      inactiveAfterLogout: true,
      noCookieNoCall: true,
      createdOnce: true,
      adminRefusal: { typed: true, status: 409, code: 'slug_taken' },
      stores: ['default', 'packed'],
      provider: ['google', 'client_secret', 1],
      buttons: [{ id: 'google', name: 'Google' }],
      startUrl: true,
      paused: 'paused',
      deleted: 'deleted',
    });
  });

  test('its types stand alone: a TypeScript program type-checks against them with no other types installed', async () => {
    fs.writeFileSync(path.join(project, 'consumer.ts'), typedConsumer);
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
        },
        files: ['consumer.ts'],
      }),
    );
    const checked = await run(process.execPath, [tsc, '-p', project], { cwd: project }).then(
      () => '',
      (error: { stdout: string }) => error.stdout,
    );
    assert.equal(checked, '', 'tsc found no error');
  });
});
