import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('configuration', () => {
  test('REDIS_KEY_PREFIX defaults to storefront-auth: and takes a prefix ending in a colon', () => {
    assert.equal(loadConfig({}).redisKeyPrefix, 'storefront-auth:');
    assert.equal(loadConfig({ REDIS_KEY_PREFIX: 'shop-eu:{auth}:' }).redisKeyPrefix, 'shop-eu:{auth}:');
  });

  test('a REDIS_KEY_PREFIX without a closing colon, with spaces or too long stops the start naming the variable', () => {
    for (const value of ['shop', 'shop a:', ':', `${'a'.repeat(64)}:`, 'shop*:']) {
      assert.equal(refusal({ REDIS_KEY_PREFIX: value }).variable, 'REDIS_KEY_PREFIX', value);
    }
  });

  test('codes are printed as plain lines only outside production, even with the log allowed in production', () => {
    assert.equal(loadConfig({}).development, true);
    assert.equal(loadConfig({ NODE_ENV: 'development' }).development, true);
    const production = loadConfig({
      NODE_ENV: 'production',
      DELIVERY_LOG_IN_PRODUCTION: 'true',
      APP_SECRET: 'x'.repeat(32),
    });
    assert.equal(production.deliveryLogAllowed, true);
    assert.equal(production.development, false);
  });

  test('a setting that becomes a timer is refused past a day, since Node would fire a longer timer at once', () => {
    assert.equal(refusal({ SHUTDOWN_TIMEOUT_SECONDS: '2147484' }).variable, 'SHUTDOWN_TIMEOUT_SECONDS');
    assert.equal(refusal({ JANITOR_INTERVAL_SECONDS: '2147484' }).variable, 'JANITOR_INTERVAL_SECONDS');
    assert.equal(loadConfig({ SHUTDOWN_TIMEOUT_SECONDS: '86400' }).shutdown.timeoutSeconds, 86400);
  });

  test('DATABASE_POOL_SIZE defaults to the pool of 10 and takes a whole number from 1 to 200; anything else stops the start naming it', () => {
    assert.equal(loadConfig({}).databasePoolSize, 10);
    assert.equal(loadConfig({ DATABASE_POOL_SIZE: '1' }).databasePoolSize, 1);
    assert.equal(loadConfig({ DATABASE_POOL_SIZE: '200' }).databasePoolSize, 200);
    for (const value of ['0', '-3', '2.5', 'ten', '201', '1e9']) {
      const error = refusal({ DATABASE_POOL_SIZE: value });
      assert.equal(error.variable, 'DATABASE_POOL_SIZE', value);
      assert.equal(error.message, `DATABASE_POOL_SIZE: expected a whole number from 1 to 200, got "${value}"`);
    }
  });

  test('MESSAGE_RETENTION_DAYS keeps sent messages at least the hour the delivery budget counts', () => {
    assert.equal(refusal({ MESSAGE_RETENTION_DAYS: '0.01' }).variable, 'MESSAGE_RETENTION_DAYS');
    assert.equal(loadConfig({ MESSAGE_RETENTION_DAYS: String(1 / 24) }).retention.messageDays, 1 / 24);
  });
});
