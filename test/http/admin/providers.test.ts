import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { createLocalJWKSet, exportJWK, jwtVerify } from 'jose';
import { loadProvider } from '../../../src/providers/configured.js';
import { clientSecretOf } from '../../../src/providers/relying-party.js';
import { deriveKeys } from '../../../src/keys.js';
import { forStore } from '../../../src/storage/database.js';
import { adminAppOf } from '../../helpers/admin.js';
import { auditRows } from '../../helpers/audit.js';
import { auth, testSecret, toReply, useHarness, type Reply } from '../../helpers/harness.js';

const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const introspectionToken = 'introspection-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const tokens = { ADMIN_TOKENS: adminToken, INTROSPECTION_TOKENS: introspectionToken };
const providers = '/admin/v1/stores/default/providers';

const google = { id: 'google', preset: 'google', client_id: 'shop.apps.example', client_secret: 'google-secret-XYZ' };

function appleKey(): { pem: string; publicKey: ReturnType<typeof generateKeyPairSync>['publicKey'] } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey };
}

describe('sign-in providers on the admin API', () => {
  const harness = useHarness();

  async function start(env: Record<string, string> = {}) {
    const t = await harness.start({ env: { ...tokens, ...env } });
    const admin = await adminAppOf(t);
    const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, token = adminToken) =>
      toReply(
        await admin.inject({
          method,
          url,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        }),
      );
    return { t, call };
  }

  function assertProblem(reply: Reply, status: number, code: string): void {
    assert.equal(reply.status, status, JSON.stringify(reply.body));
    assert.equal(reply.body.code, code);
  }

  test('adds a provider (201), replaces it (200), lists it without its secret and removes it', async () => {
    const { t, call } = await start();
    const added = await call('POST', providers, google);
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.issuer, 'https://accounts.google.com');
    assert.equal(added.body.name, 'Google');
    assert.equal(added.body.secret, 'client_secret');
    assert.ok(!JSON.stringify(added.body).includes('google-secret-XYZ'));

    const replaced = await call('POST', providers, { ...google, client_secret: 'rotated', name: 'Google account' });
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.name, 'Google account');
    const listed = await call('GET', providers);
    assert.deepEqual(
      listed.body.providers.map((p: { id: string; name: string }) => [p.id, p.name]),
      [['google', 'Google account']],
    );
    assert.ok(!JSON.stringify(listed.body).includes('rotated'));
    // Shoppers see it at once: the list is read from the table, not from a cache.
    assert.deepEqual((await t.get(`${auth}/providers`)).body, {
      providers: [{ id: 'google', name: 'Google account' }],
    });

    const events = await auditRows(t, 'store.changed');
    assert.deepEqual(
      events.map((e) => e.details),
      [
        { by: 'admin', token: events[0]!.details['token']!, provider_added: 'google' },
        { by: 'admin', token: events[0]!.details['token']!, provider_replaced: 'google' },
      ],
    );

    assert.deepEqual((await call('DELETE', `${providers}/google`)).body, { id: 'google', status: 'removed' });
    assertProblem(await call('DELETE', `${providers}/google`), 404, 'not_found');
    assert.deepEqual((await t.get(`${auth}/providers`)).body, { providers: [] });
  });

  test('keeps the client secret sealed: the row holds no plain secret, and it opens under a previous APP_SECRET only', async () => {
    const { t, call } = await start();
    await call('POST', providers, google);
    const [row] = await t.db.query<{ sealed_secret: string }>('SELECT sealed_secret FROM store_providers');
    assert.ok(!row!.sealed_secret.includes('google-secret'), 'the row holds no plain secret');
    assert.ok(
      !Buffer.from(row!.sealed_secret, 'base64url').toString('latin1').includes('google-secret'),
      'nor one merely encoded',
    );

    const db = forStore(t.db, 'default');
    const rotated = deriveKeys('another-secret-another-secret-another-secret', [testSecret]);
    const opened = await loadProvider(db, rotated, 'google');
    assert.deepEqual(opened?.secret, { kind: 'client_secret', value: 'google-secret-XYZ' });
    // Opened with the previous key, it was sealed again under the current one: the old secret can go.
    const [after] = await t.db.query<{ sealed_secret: string }>('SELECT sealed_secret FROM store_providers');
    assert.notEqual(after!.sealed_secret, row!.sealed_secret);
    assert.deepEqual(
      (await loadProvider(db, deriveKeys('another-secret-another-secret-another-secret'), 'google'))?.secret,
      {
        kind: 'client_secret',
        value: 'google-secret-XYZ',
      },
    );
    await assert.rejects(loadProvider(db, deriveKeys('a-third-secret-a-third-secret-a-third-secret'), 'google'), {
      name: 'ProviderSecretUnreadable',
    });
  });

  test('refuses bad fields, naming each, and writes nothing', async () => {
    const { t, call } = await start();
    const refused = await call('POST', providers, {
      id: 'Not An Id',
      issuer: 'http://idp.example.com',
      client_id: ' ',
      scopes: 'email profile',
    });
    assertProblem(refused, 422, 'validation_failed');
    assert.deepEqual(Object.keys(refused.body.errors).sort(), ['client_id', 'client_secret', 'id', 'issuer', 'scopes']);
    assertProblem(await call('POST', providers, { ...google, preset: 'yahoo' }), 422, 'validation_failed');
    assertProblem(
      await call('POST', providers, {
        ...google,
        client_secret: undefined,
        private_key: 'not a key',
        key_id: 'K',
        team_id: 'T',
      }),
      422,
      'validation_failed',
    );
    assertProblem(await call('POST', providers, { ...google, extra: 1 }), 422, 'validation_failed');
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM store_providers');
    assert.equal(row!.n, 0);
  });

  test('takes an issuer over plain http only on a loopback address', async () => {
    const { call } = await start();
    for (const issuer of ['http://127.0.0.1:9000', 'http://localhost:9000/realms/shop', 'https://idp.example.com']) {
      const reply = await call('POST', providers, { id: 'own', issuer, client_id: 'c', client_secret: 's' });
      assert.equal(reply.status === 201 || reply.status === 200, true, `${issuer}: ${JSON.stringify(reply.body)}`);
    }
    for (const issuer of [
      'http://10.0.0.1',
      'ftp://idp.example.com',
      'https://idp.example.com/?tenant=1',
      'not a url',
    ]) {
      assertProblem(
        await call('POST', providers, { id: 'own', issuer, client_id: 'c', client_secret: 's' }),
        422,
        'validation_failed',
      );
    }
  });

  test('an Apple provider keeps its private key sealed and signs a client secret of the team with it', async () => {
    const { t, call } = await start();
    const key = appleKey();
    const added = await call('POST', providers, {
      id: 'apple',
      preset: 'apple',
      client_id: 'com.example.shop',
      private_key: key.pem,
      key_id: 'KEY123',
      team_id: 'TEAM456',
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.secret, 'private_key');
    assert.equal(added.body.response_mode, 'form_post');
    const [row] = await t.db.query<{ sealed_secret: string }>('SELECT sealed_secret FROM store_providers');
    const keyBody = key.pem.split('\n')[1]!;
    assert.ok(!row!.sealed_secret.includes(keyBody), 'the row holds no plain key');
    assert.ok(!Buffer.from(row!.sealed_secret, 'base64url').toString('latin1').includes('PRIVATE KEY'), 'sealed');
    const provider = (await loadProvider(forStore(t.db, 'default'), t.services.keys, 'apple'))!;
    const secret = await clientSecretOf(provider, t.clock);
    const jwks = createLocalJWKSet({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'KEY123', alg: 'ES256' }] });
    const { payload, protectedHeader } = await jwtVerify(secret, jwks, {
      issuer: 'TEAM456',
      subject: 'com.example.shop',
      audience: 'https://appleid.apple.com',
      currentDate: t.clock.now(),
    });
    assert.equal(protectedHeader.kid, 'KEY123');
    assert.equal(payload.exp! - payload.iat!, 3600);
  });

  test('a phone store has no providers: 409 phone_store', async () => {
    const { call } = await start({ STORE_IDENTITY_MODE: 'phone' });
    assertProblem(await call('POST', providers, google), 409, 'phone_store');
  });

  test('an introspection token may not manage providers, and an unknown store is 404', async () => {
    const { call } = await start();
    assertProblem(await call('POST', providers, google, introspectionToken), 403, 'forbidden');
    assertProblem(await call('GET', providers, undefined, introspectionToken), 403, 'forbidden');
    assertProblem(await call('GET', '/admin/v1/stores/nowhere/providers'), 404, 'store_not_found');
  });
});
