import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseRedisClusterUrl } from '../src/storage/redis-address.js';

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

  test('REDIS_URL takes a Redis Cluster as redis+cluster:// or rediss+cluster:// with a list of host:port', () => {
    for (const url of [
      'redis+cluster://10.0.0.1:7000,10.0.0.2:7001/',
      'redis+cluster://cache-a.internal:6379',
      'rediss+cluster://default:s%40cret@[fd00::1]:6380,[fd00::2]:6380/0',
    ]) {
      assert.equal(loadConfig({ REDIS_URL: url }).redisUrl, url);
    }
    assert.deepEqual(parseRedisClusterUrl('rediss+cluster://default:s%40cret@[fd00::1]:6380,cache-b:6381/0'), {
      nodes: [
        { host: 'fd00::1', port: 6380 },
        { host: 'cache-b', port: 6381 },
      ],
      username: 'default',
      password: 's@cret',
      tls: true,
    });
    assert.deepEqual(parseRedisClusterUrl('redis+cluster://:pw@a:1').password, 'pw');
    assert.equal(parseRedisClusterUrl('redis+cluster://:pw@a:1').username, undefined);
    assert.equal(parseRedisClusterUrl('REDIS+CLUSTER://a:1').tls, false);
  });

  test('a cluster URL with a bad host:port list, a database number, or a query stops the start with a one-line reason', () => {
    const reasons: Record<string, RegExp> = {
      'redis+cluster://': /names no host:port/,
      'redis+cluster:///': /names no host:port/,
      'redis+cluster://10.0.0.1/': /"10.0.0.1" is not a host:port/,
      'redis+cluster://10.0.0.1:7000,/': /"" is not a host:port/,
      'redis+cluster://10.0.0.1:7000,10.0.0.2/': /"10.0.0.2" is not a host:port/,
      'redis+cluster://10.0.0.1:70000/': /"10.0.0.1:70000" is not a host:port/,
      'redis+cluster://10.0.0.1:0/': /is not a host:port/,
      'redis+cluster://a b:7000/': /"a b:7000" is not a host:port/,
      'redis+cluster://10.0.0.1:7000/2': /only database 0, so the cluster URL may not name "2"/,
      'redis+cluster://10.0.0.1:7000/0/x': /only database 0/,
      'redis+cluster://10.0.0.1:7000/?tls=true': /no query or fragment/,
      'redis+cluster://u:%zz@10.0.0.1:7000/': /password in the cluster URL is not valid percent-encoding/,
      'redis+cluster:10.0.0.1:7000':
        /expected a redis:\/\/ or rediss:\/\/ URL, or redis\+cluster:\/\/host:port,host:port\//,
      'http://10.0.0.1:6379': /expected a redis:\/\/ or rediss:\/\/ URL, or redis\+cluster/,
      'redis://a:1,b:2/': /not a valid URL/,
    };
    for (const [url, reason] of Object.entries(reasons)) {
      const error = refusal({ REDIS_URL: url });
      assert.equal(error.variable, 'REDIS_URL', url);
      assert.match(error.message, reason, url);
      assert.doesNotMatch(error.message, /\n/, url);
    }
  });

  test('with a Redis Cluster, REDIS_KEY_PREFIX may not contain "{": it would decide every key\'s hash slot', () => {
    const cluster = 'redis+cluster://10.0.0.1:7000,10.0.0.2:7001/';
    assert.equal(loadConfig({ REDIS_URL: cluster }).redisKeyPrefix, 'storefront-auth:');
    assert.equal(loadConfig({ REDIS_URL: cluster, REDIS_KEY_PREFIX: 'shop}eu:' }).redisKeyPrefix, 'shop}eu:');
    for (const prefix of ['shop-eu:{auth}:', 'shop{:', '{}:']) {
      const error = refusal({ REDIS_URL: cluster, REDIS_KEY_PREFIX: prefix });
      assert.equal(error.variable, 'REDIS_KEY_PREFIX', prefix);
      assert.match(error.message, /may not contain "\{" with a Redis Cluster/);
    }
    // One server has no slots: a tag in the prefix is allowed there, as before.
    assert.equal(
      loadConfig({ REDIS_URL: 'redis://10.0.0.1:6379', REDIS_KEY_PREFIX: 'shop-eu:{auth}:' }).redisKeyPrefix,
      'shop-eu:{auth}:',
    );
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

  test('MESSAGE_RETENTION_DAYS keeps sent messages at least the hour the delivery budget counts', () => {
    assert.equal(refusal({ MESSAGE_RETENTION_DAYS: '0.01' }).variable, 'MESSAGE_RETENTION_DAYS');
    assert.equal(loadConfig({ MESSAGE_RETENTION_DAYS: String(1 / 24) }).retention.messageDays, 1 / 24);
  });
});
