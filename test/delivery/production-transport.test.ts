import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runAdminCommand } from '../../src/cli/commands.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { configuredTransports, createLogger, openServices } from '../../src/services.js';
import { firstStoreId, loadStore } from '../../src/store/store.js';
import { FakeClock } from '../helpers/clock.js';
import { openTestCounterStore, truncateAll, useMigratedDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';
import { capturingLogger } from '../helpers/logs.js';

const production = { NODE_ENV: 'production', APP_SECRET: testSecret, DATA_DIR: '/nonexistent' };
const smtp = { SMTP_URL: 'smtp://127.0.0.1:2525' };
const sms = { SMS_WEBHOOK_URL: 'https://sms.example/hook', SMS_WEBHOOK_SECRET: 'hook-secret' };
const optIn = { DELIVERY_LOG_IN_PRODUCTION: 'true' };

describe('codes never go to the log in production unless the operator asks', () => {
  const database = useMigratedDatabase();
  const clock = new FakeClock();

  /** Opens the service on a fresh store row made from `env`; resolves to the refusal, if any. */
  async function start(env: Record<string, string>): Promise<ConfigError | undefined> {
    const config = loadConfig({ ...production, ...env });
    const counters = await openTestCounterStore();
    try {
      const services = await openServices(config, createLogger({ level: 'silent' }), {
        db: database.db,
        secret: testSecret,
        clock,
        counters,
        manualDispatch: true,
      });
      await services.close();
      return undefined;
    } catch (error) {
      // A refused start never took the key-value store over: it is still ours to close.
      await counters.close();
      if (error instanceof ConfigError) return error;
      throw error;
    }
  }

  test('an email store without SMTP_URL refuses to start, naming SMTP_URL and the opt-in', async () => {
    await truncateAll(database.db);
    const refusal = await start({});
    assert.ok(refusal, 'the start was refused');
    assert.equal(refusal.variable, 'SMTP_URL');
    assert.match(refusal.message, /DELIVERY_LOG_IN_PRODUCTION=true/);
    assert.doesNotMatch(refusal.message, /\n/, 'one line');
  });

  test('a phone store without SMS_WEBHOOK_URL refuses to start, naming SMS_WEBHOOK_URL', async () => {
    await truncateAll(database.db);
    const refusal = await start({ ...smtp, STORE_IDENTITY_MODE: 'phone' });
    assert.equal(refusal?.variable, 'SMS_WEBHOOK_URL');
  });

  test('the store row decides the channel, not STORE_IDENTITY_MODE: a store switched to phone needs SMS_WEBHOOK_URL', async () => {
    await truncateAll(database.db);
    assert.equal(await start({ ...smtp, ...sms, STORE_IDENTITY_MODE: 'phone' }), undefined);
    assert.equal((await loadStore(database.db, { id: firstStoreId }))?.identityMode, 'phone');
    const refusal = await start({ ...smtp, STORE_IDENTITY_MODE: 'email' });
    assert.equal(refusal?.variable, 'SMS_WEBHOOK_URL');
  });

  test('with the transport of its channel, or with DELIVERY_LOG_IN_PRODUCTION=true, the store starts', async () => {
    await truncateAll(database.db);
    assert.equal(await start(smtp), undefined, 'email store with SMTP_URL');
    assert.equal(await start(optIn), undefined, 'email store logging on purpose');
    await truncateAll(database.db);
    assert.equal(await start({ ...sms, STORE_IDENTITY_MODE: 'phone' }), undefined, 'phone store with the hook');
    await truncateAll(database.db);
    assert.equal(await start({ ...optIn, STORE_IDENTITY_MODE: 'phone' }), undefined, 'phone store logging on purpose');
  });

  test('outside production a missing transport still means the log', async () => {
    await truncateAll(database.db);
    const config = loadConfig({ APP_SECRET: testSecret });
    assert.equal(configuredTransports(config, createLogger({ level: 'silent' })).email.name, 'log');
  });

  test('in production a channel without its transport refuses to send instead of logging the message', async () => {
    const { logger, lines } = capturingLogger();
    const transports = configuredTransports(loadConfig({ ...production, ...smtp }), logger);
    const message = {
      id: '1',
      from: { storeId: firstStoreId, storeName: 'My Store', mailFrom: null, smsSender: null },
      channel: 'sms' as const,
      purpose: 'verification' as const,
      to: '+14155550123',
      content: { language: 'en', subject: 'Your code', text: 'Your code is 123456', html: '<p>123456</p>' },
    };
    await assert.rejects(transports.sms.send(message), /SMS_WEBHOOK_URL/);
    assert.equal(JSON.stringify(lines).includes('123456'), false, 'the code is not in the log');
    const optedIn = capturingLogger();
    await configuredTransports(loadConfig({ ...production, ...optIn }), optedIn.logger).sms.send(message);
    assert.ok(JSON.stringify(optedIn.lines).includes('123456'), 'logged when asked for');
  });

  describe('store set --identity-mode', () => {
    async function setMode(env: Record<string, string>, identityMode: 'email' | 'phone') {
      const config = loadConfig({ ...production, ...env });
      return runAdminCommand(
        { db: database.db, clock, config },
        { name: 'store.set', changes: { identityMode }, force: false },
      );
    }

    test('to phone without SMS_WEBHOOK_URL is refused, naming it and the opt-in, and changes nothing', async () => {
      await truncateAll(database.db);
      assert.equal(await start(smtp), undefined);
      const refused = await setMode(smtp, 'phone');
      assert.equal(refused.ok, false);
      assert.match(refused.error ?? '', /SMS_WEBHOOK_URL/);
      assert.match(refused.error ?? '', /DELIVERY_LOG_IN_PRODUCTION=true/);
      assert.equal((await loadStore(database.db, { id: firstStoreId }))?.identityMode, 'email');
    });

    test('to phone with SMS_WEBHOOK_URL or DELIVERY_LOG_IN_PRODUCTION=true is done', async () => {
      for (const env of [sms, optIn]) {
        await truncateAll(database.db);
        assert.equal(await start(smtp), undefined);
        const done = await setMode(env, 'phone');
        assert.equal(done.ok, true, done.error);
        assert.equal((await loadStore(database.db, { id: firstStoreId }))?.identityMode, 'phone');
      }
    });

    test('back to email without SMTP_URL is refused the same way', async () => {
      await truncateAll(database.db);
      assert.equal(await start({ ...sms, STORE_IDENTITY_MODE: 'phone' }), undefined);
      const refused = await setMode(sms, 'email');
      assert.equal(refused.ok, false);
      assert.match(refused.error ?? '', /SMTP_URL/);
      assert.equal((await loadStore(database.db, { id: firstStoreId }))?.identityMode, 'phone');
    });
  });
});
