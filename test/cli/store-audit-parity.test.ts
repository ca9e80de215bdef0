import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tokenIdOf } from '../../src/http/admin/tokens.js';
import { adminAppOf, adminCaller } from '../helpers/admin.js';
import { runAdminInProcess } from '../helpers/admin-cli.js';
import { useHarness, type TestApp } from '../helpers/harness.js';

/**
 * Each store operation, made once through the admin API and once from the command line, leaves
 * the same rows in the store's audit trail: the same events with the same details, but for who
 * made it (`by: admin` and its token, or `by: operator`).
 */

const adminToken = 'admin-token-PPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPP';
const adminTokenId = tokenIdOf(adminToken);

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

  test('create, change fields, settings, branding and languages, add and remove a host, a provider and a webhook endpoint', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken, WEBHOOK_ALLOW_PRIVATE: 'true' } });
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
    const hook = ok(
      await call('POST', `/admin/v1/stores/${api.id}/webhooks`, { url: 'http://127.0.0.1:9/hooks', events: ['*'] }),
    );
    ok(await call('DELETE', `/admin/v1/stores/${api.id}/webhooks/${hook.id}`));

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
    const cliHook = await cli('webhooks', 'add', ...named, '--url', 'http://127.0.0.1:9/hooks', '--events', '*');
    await cli('webhooks', 'remove', ...named, '--id', cliHook.id);

    const fromApi = await trail(t, api.id);
    const fromCli = await trail(t, made.id);
    // Each side's own names: its slug, host and endpoint id.
    const same = (row: unknown, names: [string, string][]) =>
      names.reduce((text, [from, to]) => text.replaceAll(from, to), JSON.stringify(row));
    assert.deepEqual(
      fromCli.map((row) =>
        same(row, [
          ['cli.shop.test', 'host'],
          [cliHook.id, 'hook'],
        ]),
      ),
      fromApi.map((row) =>
        same(row, [
          ['by-api', 'by-cli'],
          ['api.shop.test', 'host'],
          [hook.id, 'hook'],
        ]),
      ),
    );
    assert.deepEqual(
      fromApi.map((row) => row.event),
      ['store.created', ...Array(7).fill('store.changed')],
    );
    // Who made it: the token over the admin API, the operator at the command line.
    const whoOf = async (storeId: string) =>
      (
        await t.db.query<{ details: Record<string, string> }>('SELECT details FROM audit_events WHERE store_id = $1', [
          storeId,
        ])
      ).map(({ details }) => `${details['by']} ${details['token'] ?? ''}`.trim());
    assert.deepEqual(new Set(await whoOf(api.id)), new Set([`admin ${adminTokenId}`]));
    assert.deepEqual(new Set(await whoOf(made.id)), new Set(['operator']));
    assert.deepEqual(fromApi[1]!.details, { fields: 'branding,languages,name,settings' });
  });
});
