import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { deriveKeys } from '../../src/keys.js';
import { ensureStore } from '../../src/store/store.js';
import { runAdminInProcess } from '../helpers/admin-cli.js';
import { FakeClock } from '../helpers/clock.js';
import { useMigratedDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';

const config = loadConfig({ APP_SECRET: testSecret, DATA_DIR: '/nonexistent' });
const keys = deriveKeys(testSecret);

describe('store set --logo-url, --primary-colour, --accent-colour and --support-url', () => {
  const database = useMigratedDatabase();
  const clock = new FakeClock();

  const cli = (...argv: string[]) => runAdminInProcess({ db: database.db, clock, config, keys }, argv);

  beforeEach(async () => {
    await database.db.query('TRUNCATE stores, store_hosts RESTART IDENTITY CASCADE');
    await ensureStore(database.db, clock, { name: 'My Store', identityMode: 'email', verificationRequired: false });
  });

  test('sets each part, keeps the parts not named, and clears one with an empty value', async () => {
    const set = await cli(
      'store',
      'set',
      '--logo-url',
      'https://cdn.shop.example/logo.png',
      '--primary-colour',
      '#0B5D1E',
      '--accent-colour',
      '#FFB000',
      '--support-url',
      'https://shop.example/help',
    );
    assert.equal(set.code, 0, set.error);
    assert.deepEqual(set.output.branding, {
      logo_url: 'https://cdn.shop.example/logo.png',
      primary_colour: '#0b5d1e',
      accent_colour: '#ffb000',
      support_url: 'https://shop.example/help',
    });
    const cleared = await cli('store', 'set', '--logo-url', '');
    assert.equal(cleared.code, 0, cleared.error);
    assert.equal(cleared.output.branding.logo_url, null);
    assert.equal(cleared.output.branding.primary_colour, '#0b5d1e');
  });

  test('refuses a colour under WCAG AA naming the ratio, and a URL that is not https://, with exit 2', async () => {
    const light = await cli('store', 'set', '--primary-colour', '#FFCC00');
    assert.equal(light.code, 2);
    assert.match(light.error!, /--primary-colour #ffcc00 has a contrast of 1\.51:1 with white/);
    const dark = await cli('store', 'set', '--accent-colour', '#1f4fbf');
    assert.equal(dark.code, 2);
    assert.match(dark.error!, /--accent-colour #1f4fbf has a contrast of 2\.39:1 with the page's text/);
    assert.equal((await cli('store', 'set', '--support-url', 'http://shop.example/help')).code, 2);
    assert.equal((await cli('store', 'set', '--primary-colour', 'green')).code, 2);
    const unchanged = await cli('store', 'show');
    assert.deepEqual(unchanged.output.branding, {
      logo_url: null,
      primary_colour: null,
      accent_colour: null,
      support_url: null,
    });
  });
});
