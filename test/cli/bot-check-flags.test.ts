import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { deriveKeys, unseal } from '../../src/keys.js';
import { ensureStore, loadStore } from '../../src/store/store.js';
import { runAdminInProcess } from '../helpers/admin-cli.js';
import { FakeClock } from '../helpers/clock.js';
import { useMigratedDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';

const config = loadConfig({ APP_SECRET: testSecret, DATA_DIR: '/nonexistent' });
const keys = deriveKeys(testSecret);

describe('store set --bot-check and --phone-countries', () => {
  const database = useMigratedDatabase();
  const clock = new FakeClock();

  const cli = (...argv: string[]) => runAdminInProcess({ db: database.db, clock, config, keys }, argv);

  beforeEach(async () => {
    await database.db.query('TRUNCATE stores, store_hosts RESTART IDENTITY CASCADE');
    await ensureStore(database.db, clock, { name: 'My Store', identityMode: 'phone', verificationRequired: false });
  });

  test('sets a bot check with its secret read from a file and sealed, shows it without the secret, and turns it off', async () => {
    const secretFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bot-check-')), 'secret');
    fs.writeFileSync(secretFile, 'the-secret-key\n');
    const set = await cli(
      'store',
      'set',
      '--bot-check',
      'recaptcha',
      '--bot-check-site-key',
      'site-key',
      '--bot-check-secret-file',
      secretFile,
      '--bot-check-on',
      'register, resend',
      '--phone-countries',
      'de,AT',
    );
    assert.equal(set.code, 0, set.error);
    assert.deepEqual(set.output.settings['auth.bot_check'], {
      provider: 'recaptcha',
      site_key: 'site-key',
      on: ['register', 'resend'],
      verify_url: null,
      secret_set: true,
    });
    assert.deepEqual(set.output.settings['auth.phone_countries'], ['DE', 'AT']);
    assert.ok(!JSON.stringify(set.output).includes('the-secret-key'));
    const store = await loadStore(database.db, { id: 'default' });
    assert.equal(
      unseal([keys.hooks], store!.botCheck!.sealedSecret)?.text,
      'the-secret-key',
      'sealed, newline dropped',
    );

    const off = await cli('store', 'set', '--bot-check', 'off');
    assert.equal(off.code, 0, off.error);
    assert.equal(off.output.settings['auth.bot_check'], null);
  });

  test('refuses an incomplete bot check, an unknown operation and an unknown country with exit 2', async () => {
    assert.equal((await cli('store', 'set', '--bot-check', 'turnstile', '--bot-check-site-key', 'k')).code, 2);
    assert.equal((await cli('store', 'set', '--bot-check-site-key', 'k')).code, 2);
    const wrongOperation = await cli(
      'store',
      'set',
      '--bot-check',
      'turnstile',
      '--bot-check-site-key',
      'k',
      '--bot-check-secret-file',
      '/nonexistent',
      '--bot-check-on',
      'login',
    );
    assert.equal(wrongOperation.code, 2);
    assert.match(wrongOperation.error!, /--bot-check-on must be one of/);
    assert.equal((await cli('store', 'set', '--phone-countries', 'XX')).code, 2);
    const unreadable = await cli(
      'store',
      'set',
      '--bot-check',
      'turnstile',
      '--bot-check-site-key',
      'k',
      '--bot-check-secret-file',
      '/nonexistent/secret',
      '--bot-check-on',
      'forgot',
    );
    assert.equal(unreadable.code, 1);
    assert.match(unreadable.error!, /--bot-check-secret-file/);
  });
});
