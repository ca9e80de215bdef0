import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminAppOf, adminCaller } from '../helpers/admin.js';
import { runAdminInProcess } from '../helpers/admin-cli.js';
import { useHarness, type TestApp } from '../helpers/harness.js';

/**
 * Each store operation, made once through the admin API and once from the command line, leaves
 * the same rows in the store's audit trail: the same events with the same details, but for who
 * made it (`by: admin` and its token, or `by: operator`).
 */

const adminToken = 'admin-token-PPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPP';

async function trail(t: TestApp, storeId: string) {
  await t.services.background.drain();
  const rows = await t.db.query<{ event: string; details: Record<string, string> }>(
    'SELECT event, details FROM audit_events WHERE store_id = $1 ORDER BY id',
    [storeId],
  );
  return rows.map(({ event, details }) => {
    const { by: _by, token: _token, ...rest } = details;
    return { event, details: rest };
  });
}

describe('a store operation is audited alike from the admin API and the command line', () => {
  const harness = useHarness();

  test('create, change fields, settings, branding and languages, add and remove a host, add and remove a provider', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const { config, keys } = t.services;
    const cli = async (...argv: string[]) => {
      const outcome = await runAdminInProcess({ db: t.db, clock: t.clock, config, keys }, argv);
      assert.equal(outcome.code, 0, outcome.error);
      return outcome.output;
    };
    const ok = (reply: { status: number; body: any }) => {
      assert.ok(reply.status < 300, JSON.stringify(reply.body));
      return reply.body;
    };
    const provider = {
      id: 'id-example',
      issuer: 'https://id.example.com',
      client_id: 'shop',
      client_secret: 'a-secret-of-the-provider',
    };

    const api = ok(await call('POST', '/admin/v1/stores', { slug: 'by-api', name: 'By API' }));
    ok(
      await call('PATCH', `/admin/v1/stores/${api.id}`, {
        name: 'Renamed',
        settings: { 'auth.sign_in_with_code': true },
        branding: { primary_colour: '#0b5d1e' },
        languages: ['en', 'ar'],
      }),
    );
    ok(await call('POST', `/admin/v1/stores/${api.id}/hosts`, { host: 'api.shop.test' }));
    ok(await call('DELETE', `/admin/v1/stores/${api.id}/hosts/api.shop.test`));
    ok(await call('POST', `/admin/v1/stores/${api.id}/providers`, provider));
    ok(await call('DELETE', `/admin/v1/stores/${api.id}/providers/id-example`));

    const made = await cli('store', 'create', '--slug', 'by-cli', '--name', 'By CLI');
    const named = ['--store', 'by-cli'];
    await cli(
      'store',
      'set',
      ...named,
      '--name',
      'Renamed',
      '--sign-in-with-code',
      'true',
      '--primary-colour',
      '#0b5d1e',
      '--languages',
      'en,ar',
    );
    await cli('store', 'hosts', 'add', ...named, 'cli.shop.test');
    await cli('store', 'hosts', 'remove', ...named, 'cli.shop.test');
    await cli(
      'store',
      'providers',
      'add',
      ...named,
      '--id',
      'id-example',
      '--issuer',
      provider.issuer,
      '--client-id',
      provider.client_id,
      '--client-secret',
      provider.client_secret,
    );
    await cli('store', 'providers', 'remove', ...named, '--id', 'id-example');

    const fromApi = await trail(t, api.id);
    const fromCli = await trail(t, made.id);
    assert.deepEqual(
      fromCli.map((row) => JSON.stringify(row).replace('cli.shop.test', 'api.shop.test')),
      fromApi.map((row) => JSON.stringify(row).replace('by-api', 'by-cli')),
    );
    assert.deepEqual(
      fromApi.map((row) => row.event),
      ['store.created', 'store.changed', 'store.changed', 'store.changed', 'store.changed', 'store.changed'],
    );
    assert.deepEqual(fromApi[1]!.details, { fields: 'branding,languages,name,settings' });
  });
});
