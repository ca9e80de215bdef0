import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ConfigError,
  configurationVariables,
  editDistance,
  loadConfig,
  nearMissVariables,
  nearMissWarning,
  type CountersConfig,
} from '../src/config.js';
import { flag, text } from '../src/config/read.js';
import { makeTestCertificates, type TestCertificates } from './helpers/tls.js';
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

function redisOf(env: Record<string, string>): Extract<CountersConfig, { kind: 'redis' }> {
  const counters = loadConfig(env).counters;
  if (counters.kind !== 'redis') assert.fail(`counters in ${counters.kind}, not in Redis`);
  return counters;
}

describe('configuration', () => {
  test('WEBAUTHN_RP_ID defaults to the host of the first allowed origin, else localhost', () => {
    assert.deepEqual(loadConfig({}).webauthn, { rpId: 'localhost', origins: [], includeOwnOrigin: true });
    const shop = loadConfig({
      CORS_ALLOWED_ORIGINS: 'https://shop.example,https://www.shop.example,http://shop.example',
    });
    // Only the allowed origins that could use passkeys of that RP ID: https, on the RP ID.
    assert.deepEqual(shop.webauthn, {
      rpId: 'shop.example',
      origins: ['https://shop.example', 'https://www.shop.example'],
      includeOwnOrigin: true,
    });
    assert.equal(
      loadConfig({ CORS_ALLOWED_ORIGINS: 'https://10.0.0.5,https://shop.example' }).webauthn.rpId,
      'shop.example',
    );
  });

  test('WEBAUTHN_ORIGINS replaces the default origins, and each must be an https origin on the RP ID', () => {
    const config = loadConfig({
      WEBAUTHN_RP_ID: 'shop.example',
      WEBAUTHN_ORIGINS: 'https://shop.example, https://account.shop.example',
      CORS_ALLOWED_ORIGINS: 'https://other.example',
    });
    assert.deepEqual(config.webauthn, {
      rpId: 'shop.example',
      origins: ['https://shop.example', 'https://account.shop.example'],
      includeOwnOrigin: false,
    });
    assert.deepEqual(loadConfig({ WEBAUTHN_ORIGINS: 'http://localhost:3000' }).webauthn.origins, [
      'http://localhost:3000',
    ]);
  });

  test('a WEBAUTHN_RP_ID that is not a domain name, or a WEBAUTHN_ORIGINS entry off it or on plain http, stops the start', () => {
    for (const value of [
      'https://shop.example',
      'shop.example:443',
      '10.0.0.5',
      'Shop.Example',
      'shop..example',
      '-shop.example',
    ]) {
      const error = refusal({ WEBAUTHN_RP_ID: value });
      assert.equal(error.variable, 'WEBAUTHN_RP_ID', value);
      assert.match(error.message, /domain name/);
    }
    const off = refusal({ WEBAUTHN_RP_ID: 'shop.example', WEBAUTHN_ORIGINS: 'https://evilshop.example' });
    assert.equal(off.variable, 'WEBAUTHN_ORIGINS');
    assert.match(off.message, /not on the RP ID shop\.example/);
    const plain = refusal({ WEBAUTHN_RP_ID: 'shop.example', WEBAUTHN_ORIGINS: 'http://shop.example' });
    assert.match(plain.message, /plain http/);
    assert.equal(refusal({ WEBAUTHN_ORIGINS: 'not an origin' }).variable, 'WEBAUTHN_ORIGINS');
  });

  test('a single-label COOKIE_DOMAIN such as localhost is refused with the rule and a *.localhost that works', () => {
    for (const value of ['localhost', '.localhost', 'shop']) {
      const error = refusal({ COOKIE_DOMAIN: value });
      assert.equal(error.variable, 'COOKIE_DOMAIN', value);
      assert.match(error.message, /at least two labels/, value);
      assert.match(error.message, /single label/, value);
      assert.match(error.message, /COOKIE_DOMAIN=shop\.localhost/, value);
    }
    assert.match(refusal({ COOKIE_DOMAIN: 'shop.example:443' }).message, /at least two labels.*without scheme, port/);
    assert.equal(loadConfig({ COOKIE_DOMAIN: 'shop.localhost' }).cookieDomain, 'shop.localhost');
  });

  test('REDIS_KEY_PREFIX defaults to storefront-auth: and takes a prefix ending in a colon', () => {
    const redis = { REDIS_URL: 'redis://cache.example:6379' };
    assert.equal(redisOf(redis).keyPrefix, 'storefront-auth:');
    assert.equal(redisOf({ ...redis, REDIS_KEY_PREFIX: 'shop-eu:{auth}:' }).keyPrefix, 'shop-eu:{auth}:');
    // Without REDIS_URL the prefix is checked (see below) but nothing uses it.
    assert.deepEqual(loadConfig({ REDIS_KEY_PREFIX: 'shop-eu:{auth}:' }).counters, { kind: 'memory' });
  });

  test('counters are in memory without REDIS_URL, and in Redis with it: one server or a cluster, with or without TLS', () => {
    assert.deepEqual(loadConfig({}).counters, { kind: 'memory' });
    assert.deepEqual(loadConfig({ REDIS_URL: 'redis://cache.example:6379/2' }).counters, {
      kind: 'redis',
      url: 'redis://cache.example:6379/2',
      cluster: false,
      tls: undefined,
      keyPrefix: 'storefront-auth:',
    });
    assert.deepEqual(redisOf({ REDIS_URL: 'rediss://cache.example:6380' }).tls, { ca: undefined });
    const cluster = redisOf({ REDIS_URL: 'rediss+cluster://a:7000,b:7001/', REDIS_KEY_PREFIX: 'shop:' });
    assert.deepEqual(cluster, {
      kind: 'redis',
      url: 'rediss+cluster://a:7000,b:7001/',
      cluster: true,
      tls: { ca: undefined },
      keyPrefix: 'shop:',
    });
    assert.equal(redisOf({ REDIS_URL: 'redis+cluster://a:7000' }).tls, undefined);
    for (const gone of ['redisUrl', 'redisKeyPrefix', 'redisCa', 'smtpUrl', 'smtpCa', 'mailFrom']) {
      assert.equal(gone in loadConfig({ REDIS_URL: 'redis://c:6379', SMTP_URL: 'smtp://mail.example' }), false, gone);
    }
  });

  test('mail goes nowhere without SMTP_URL, and through SMTP with it, from MAIL_FROM', () => {
    assert.deepEqual(loadConfig({}).mail, { kind: 'none' });
    assert.deepEqual(loadConfig({ MAIL_FROM: 'Shop <shop@example.com>' }).mail, { kind: 'none' });
    assert.deepEqual(loadConfig({ SMTP_URL: 'smtps://u:p@mail.example' }).mail, {
      kind: 'smtp',
      url: 'smtps://u:p@mail.example',
      from: 'Storefront <no-reply@localhost>',
      ca: undefined,
    });
    const from = 'Shop <shop@example.com>';
    const mail = loadConfig({ SMTP_URL: 'smtp://mail.example:587', MAIL_FROM: from }).mail;
    assert.equal(mail.kind === 'smtp' ? mail.from : 'not smtp', from);
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
      assert.equal(redisOf({ REDIS_URL: url }).url, url);
      assert.equal(redisOf({ REDIS_URL: url }).cluster, true);
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
    assert.equal(redisOf({ REDIS_URL: cluster }).keyPrefix, 'storefront-auth:');
    assert.equal(redisOf({ REDIS_URL: cluster, REDIS_KEY_PREFIX: 'shop}eu:' }).keyPrefix, 'shop}eu:');
    for (const prefix of ['shop-eu:{auth}:', 'shop{:', '{}:']) {
      const error = refusal({ REDIS_URL: cluster, REDIS_KEY_PREFIX: prefix });
      assert.equal(error.variable, 'REDIS_KEY_PREFIX', prefix);
      assert.match(error.message, /may not contain "\{" with a Redis Cluster/);
    }
    // One server has no slots: a tag in the prefix is allowed there, as before.
    assert.equal(
      redisOf({ REDIS_URL: 'redis://10.0.0.1:6379', REDIS_KEY_PREFIX: 'shop-eu:{auth}:' }).keyPrefix,
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

  test('DATABASE_POOL_SIZE defaults to the pool of 10 and takes a whole number from 1 to 200; anything else stops the start naming it', () => {
    const server = { APP_SECRET: 'x'.repeat(32), DATABASE_URL: 'postgres://db.example/shop' };
    // The pool belongs to either database mode: the embedded server's connection slots follow it.
    assert.equal(loadConfig({}).database.poolSize, 10);
    assert.equal(loadConfig({ DATABASE_POOL_SIZE: '1' }).database.poolSize, 1);
    assert.equal(loadConfig({ ...server }).database.poolSize, 10);
    assert.equal(loadConfig({ ...server, DATABASE_POOL_SIZE: '200' }).database.poolSize, 200);
    assert.equal('databasePoolSize' in loadConfig({}), false);
    for (const value of ['0', '-3', '2.5', 'ten', '201', '1e9']) {
      const error = refusal({ DATABASE_POOL_SIZE: value });
      assert.equal(error.variable, 'DATABASE_POOL_SIZE', value);
      assert.equal(error.message, `DATABASE_POOL_SIZE: expected a whole number from 1 to 200, got "${value}"`);
    }
  });

  test('every number setting has a maximum: one past it stops the start naming the variable', () => {
    // Retentions of a century at most: far past that, a cutoff falls outside PostgreSQL's timestamps
    // and every janitor pass would fail.
    const maxima: Array<[variable: string, max: number, alongside?: Record<string, string>]> = [
      ['SESSION_RETENTION_DAYS', 36_500],
      ['CODE_RETENTION_DAYS', 36_500],
      ['MESSAGE_RETENTION_DAYS', 36_500],
      ['FAILED_MESSAGE_RETENTION_DAYS', 36_500],
      ['AUDIT_RETENTION_DAYS', 36_500],
      ['JANITOR_INTERVAL_SECONDS', 86_400],
      ['SHUTDOWN_TIMEOUT_SECONDS', 86_400],
      ['SHUTDOWN_DELAY_SECONDS', 86_399, { SHUTDOWN_TIMEOUT_SECONDS: '86400' }],
      ['DELIVERY_RETRY_BASE_SECONDS', 600],
      ['DELIVERY_WINDOW_SECONDS', 604_800],
      ['DELIVERY_BUDGET_PER_HOUR', 1_000_000],
      ['DATABASE_POOL_SIZE', 200],
      ['HASH_THREADS', 64],
      ['METRICS_PORT', 65_535],
      ['METRICS_STORE_LABELS', 1_000],
      ['PORT', 65_535],
    ];
    for (const [variable, max, alongside = {}] of maxima) {
      assert.doesNotThrow(() => loadConfig({ ...alongside, [variable]: String(max) }), variable);
      for (const value of [String(max + 1), '3000000', '100000000', '1e300']) {
        const error = refusal({ ...alongside, [variable]: value });
        assert.equal(error.variable, variable, `${variable}=${value}`);
        assert.ok(error.message.startsWith(`${variable}: `), error.message);
      }
    }
    assert.equal(
      refusal({ AUDIT_RETENTION_DAYS: '3000000' }).message,
      'AUDIT_RETENTION_DAYS: expected a number from 0 to 36500, got "3000000"',
    );
  });

  test('METRICS_STORE_LABELS defaults to 100 and takes a whole number from 0 (every store _other) to 1000', () => {
    assert.equal(loadConfig({}).metricsStoreLabels, 100);
    assert.equal(loadConfig({ METRICS_STORE_LABELS: '0' }).metricsStoreLabels, 0);
    assert.equal(loadConfig({ METRICS_STORE_LABELS: ' 250 ' }).metricsStoreLabels, 250);
    for (const value of ['-1', '2.5', 'all', '1001']) {
      const error = refusal({ METRICS_STORE_LABELS: value });
      assert.equal(error.variable, 'METRICS_STORE_LABELS', value);
      assert.equal(error.message, `METRICS_STORE_LABELS: expected a whole number from 0 to 1000, got "${value}"`);
    }
  });

  test('MESSAGE_RETENTION_DAYS keeps sent messages at least the hour the delivery budget counts', () => {
    assert.equal(refusal({ MESSAGE_RETENTION_DAYS: '0.01' }).variable, 'MESSAGE_RETENTION_DAYS');
    assert.equal(loadConfig({ MESSAGE_RETENTION_DAYS: String(1 / 24) }).retention.messageDays, 1 / 24);
  });

  test('APP_SECRET_PREVIOUS takes up to five comma-separated secrets of APP_SECRET’s length', () => {
    const current = 'c'.repeat(40);
    const [a, b] = ['a'.repeat(32), 'b'.repeat(48)];
    assert.deepEqual(loadConfig({}).appSecretPrevious, []);
    assert.deepEqual(loadConfig({ APP_SECRET: current, APP_SECRET_PREVIOUS: ` ${a} , ${b},` }).appSecretPrevious, [
      a,
      b,
    ]);
    const six = Array.from({ length: 6 }, (_, i) => String(i).repeat(32)).join(',');
    assert.equal(
      refusal({ APP_SECRET: current, APP_SECRET_PREVIOUS: six }).message,
      'APP_SECRET_PREVIOUS: at most 5 comma-separated secrets, got 6',
    );
  });

  test('a short APP_SECRET_PREVIOUS entry, or one equal to APP_SECRET, is refused by its place, never by its value', () => {
    const current = 'c'.repeat(40);
    const short = refusal({ APP_SECRET: current, APP_SECRET_PREVIOUS: `${'a'.repeat(32)},too-short-to-be-a-secret` });
    assert.equal(short.message, 'APP_SECRET_PREVIOUS: secret 2 of 2 must be at least 32 characters, like APP_SECRET');
    const same = refusal({ APP_SECRET: current, APP_SECRET_PREVIOUS: current });
    assert.equal(
      same.message,
      'APP_SECRET_PREVIOUS: secret 1 of 1 is APP_SECRET itself; list only the secrets it replaces',
    );
    assert.ok(!same.message.includes(current), 'the secret is not in the message');
  });

  test('HASH_THREADS defaults to the cores the process may use and takes a whole number from 1 to 64', () => {
    assert.equal(loadConfig({}).hashThreads, os.availableParallelism());
    assert.equal(loadConfig({ HASH_THREADS: '3' }).hashThreads, 3);
    assert.equal(loadConfig({ HASH_THREADS: '64' }).hashThreads, 64);
    for (const value of ['0', '-1', '1.5', 'two', '65']) {
      const error = refusal({ HASH_THREADS: value });
      assert.equal(error.message, `HASH_THREADS: expected a whole number from 1 to 64, got "${value}"`);
    }
  });

  describe('CA files and TLS settings', () => {
    let certificates: TestCertificates;
    let notPem: string;
    before(async () => {
      certificates = await makeTestCertificates();
      notPem = path.join(certificates.folder, 'not-a-certificate.txt');
      fs.writeFileSync(notPem, 'hello\n');
    });
    after(() => certificates.remove());

    const secret = { APP_SECRET: 'x'.repeat(32) };
    const pg = (query: string) => ({ ...secret, DATABASE_URL: `postgres://db.example/shop${query}` });

    test('a CA file is read once at start, keeping its certificates', () => {
      const config = loadConfig({ ...pg('?sslmode=verify-full'), DATABASE_CA_FILE: certificates.caFile });
      // The CA goes with the server it verifies; the embedded server, reached by its socket, has none.
      assert.equal(config.database.mode, 'server');
      assert.equal(
        config.database.mode === 'server' ? config.database.ca : 'not a server',
        fs.readFileSync(certificates.caFile, 'utf8').trim(),
      );
      const withoutCa = loadConfig(pg('?sslmode=verify-full')).database;
      assert.equal(withoutCa.mode === 'server' ? withoutCa.ca : 'not a server', undefined);
      assert.equal('ca' in loadConfig({}).database, false);
      assert.equal('databaseCa' in config, false);
    });

    test('a missing, unreadable or non-PEM CA file stops the start with one line naming the variable and the file', () => {
      const missing = path.join(os.tmpdir(), 'no-such-ca-file.pem');
      for (const [variable, env] of [
        ['DATABASE_CA_FILE', pg('?sslmode=verify-full')],
        ['REDIS_CA_FILE', { REDIS_URL: 'rediss://cache.example:6380' }],
        ['SMTP_CA_FILE', { SMTP_URL: 'smtps://mail.example' }],
      ] as const) {
        for (const [file, reason] of [
          [missing, /cannot read .*no-such-ca-file\.pem \(ENOENT\)/],
          [certificates.folder, /cannot read .* \(EISDIR\)/],
          [notPem, /holds no PEM certificate/],
        ] as const) {
          const error = refusal({ ...env, [variable]: file });
          assert.equal(error.variable, variable);
          assert.match(error.message, reason);
          assert.doesNotMatch(error.message, /\n/);
        }
      }
    });

    test('DATABASE_URL takes sslmode disable, require, verify-ca or verify-full, and refuses modes that fall back or skip checks', () => {
      for (const mode of ['disable', 'require', 'verify-full']) loadConfig(pg(`?sslmode=${mode}`));
      for (const [query, reason] of [
        ['?sslmode=prefer', /would fall back to an unencrypted connection/],
        ['?sslmode=allow', /would fall back to an unencrypted connection/],
        ['?sslmode=no-verify', /accepts any certificate/],
        ['?sslmode=verify', /sslmode must be one of disable, require, verify-ca, verify-full/],
        ['?sslmode=require&sslrootcert=/etc/ca.pem', /set DATABASE_CA_FILE/],
        ['?sslmode=require&uselibpqcompat=true', /uselibpqcompat is not read/],
        ['?ssl=true', /set TLS with sslmode/],
        ['?sslmode=verify-full&sslcert=/c.pem&sslkey=/k.pem', /client certificates/],
      ] as const) {
        const error = refusal(pg(query));
        assert.equal(error.variable, 'DATABASE_URL', query);
        assert.match(error.message, reason);
      }
    });

    test('sslmode=verify-ca needs DATABASE_CA_FILE, and a CA file needs a DATABASE_URL that asks for TLS', () => {
      assert.equal(refusal(pg('?sslmode=verify-ca')).variable, 'DATABASE_CA_FILE');
      loadConfig({ ...pg('?sslmode=verify-ca'), DATABASE_CA_FILE: certificates.caFile });
      assert.match(refusal({ ...pg(''), DATABASE_CA_FILE: certificates.caFile }).message, /add sslmode=verify-full/);
      assert.match(refusal({ DATABASE_CA_FILE: certificates.caFile }).message, /without DATABASE_URL/);
    });

    test('REDIS_CA_FILE needs a rediss:// URL, SMTP_CA_FILE an SMTP_URL, and SMTP_URL takes no query', () => {
      assert.equal(
        redisOf({ REDIS_URL: 'rediss://c:6380', REDIS_CA_FILE: certificates.caFile }).tls?.ca,
        fs.readFileSync(certificates.caFile, 'utf8').trim(),
      );
      const smtp = loadConfig({ SMTP_URL: 'smtps://mail.example', SMTP_CA_FILE: certificates.caFile }).mail;
      assert.equal(smtp.kind === 'smtp' ? smtp.ca : 'not smtp', fs.readFileSync(certificates.caFile, 'utf8').trim());
      assert.match(
        refusal({ REDIS_URL: 'redis://c:6379', REDIS_CA_FILE: certificates.caFile }).message,
        /not a rediss:\/\//,
      );
      assert.equal(refusal({ REDIS_CA_FILE: certificates.caFile }).variable, 'REDIS_CA_FILE');
      assert.equal(refusal({ SMTP_CA_FILE: certificates.caFile }).variable, 'SMTP_CA_FILE');
      const query = refusal({ SMTP_URL: 'smtp://u:p@mail.example:587?tls.rejectUnauthorized=false' });
      assert.equal(query.variable, 'SMTP_URL');
      assert.match(query.message, /takes no query parameters/);
    });
  });
});

describe('a variable one or two letters off a setting', () => {
  test('is reported with the setting it resembles, and a mistyped DATABASE_URL still means embedded mode', () => {
    const config = loadConfig({ DATABSE_URL: 'postgres://auth@db:5432/storefront', DATA_DIR: '/tmp/sfa-near-miss' });
    assert.equal(config.database.mode, 'embedded');
    assert.deepEqual(config.nearMisses, [{ variable: 'DATABSE_URL', resembles: 'DATABASE_URL' }]);
    assert.match(nearMissWarning(config.nearMisses[0]!), /DATABSE_URL .*ignored.*did you mean DATABASE_URL\?/);
  });

  test('swapped, missing, extra and changed letters, and a lower-case name, are caught', () => {
    assert.deepEqual(
      nearMissVariables({
        REDIS_ULR: '',
        APP_SECRT: '',
        SMTP_URLS: '',
        LOG_LEVLE: '',
        database_url: '',
        TRUST_PROXYS: '',
      }),
      [
        { variable: 'APP_SECRT', resembles: 'APP_SECRET' },
        { variable: 'LOG_LEVLE', resembles: 'LOG_LEVEL' },
        { variable: 'REDIS_ULR', resembles: 'REDIS_URL' },
        { variable: 'SMTP_URLS', resembles: 'SMTP_URL' },
        { variable: 'TRUST_PROXYS', resembles: 'TRUST_PROXY' },
        { variable: 'database_url', resembles: 'DATABASE_URL' },
      ],
    );
  });

  test('the settings themselves, short names and a machine’s usual variables are left alone', () => {
    const usual = [
      ...['PATH', 'HOME', 'HOSTNAME', 'HOSTTYPE', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'TERM'],
      ...['COLORTERM', 'PWD', 'OLDPWD', 'SHLVL', 'TMPDIR', 'EDITOR', 'PAGER', 'DISPLAY', 'MAIL', 'MAILPATH'],
      ...['TZ', 'NODE_OPTIONS', 'NODE_PATH', 'NODE_VERSION', 'NODE_EXTRA_CA_CERTS', 'XDG_RUNTIME_DIR', 'XDG_DATA_DIRS'],
      ...['SSH_AUTH_SOCK', 'DEBIAN_FRONTEND', 'JAVA_HOME', 'GOPATH', 'PYTHONPATH', 'HISTSIZE', 'INIT_CWD'],
      ...['KUBERNETES_SERVICE_HOST', 'KUBERNETES_PORT', 'PGHOST', 'PGUSER', 'PGPASSWORD', 'PGDATABASE', 'PGDATA'],
      ...['REDIS_HOST', 'REDIS_PORT', 'SMTP_HOST', 'SMTP_PORT', 'SMTP_USER', 'DATABASE_HOST', 'MAIL_HOST'],
      ...['npm_config_cache', 'npm_lifecycle_event', 'npm_package_name', 'npm_execpath', 'npm_node_execpath'],
      ...['STOREFRONT_TEST_SERVER_URL', 'STOREFRONT_TEST_DIRECT_URL', 'CHROMIUM_PATH', 'SCREENSHOT_DIR'],
    ];
    const env = Object.fromEntries([...usual, ...configurationVariables].map((name) => [name, 'x']));
    assert.deepEqual(nearMissVariables(env), []);
    // Under six characters a name is near too much else: PORTS is no mistake for PORT worth a warning.
    assert.deepEqual(nearMissVariables({ PORTS: '', HOSTS: '', HOSTED: '', PORTAL: '' }), []);
    assert.deepEqual(loadConfig({}).nearMisses, []);
  });

  test('the readers refuse a variable that is not declared', () => {
    assert.throws(
      () => text({ NOT_A_SETTING: 'x' }, 'NOT_A_SETTING' as never),
      /NOT_A_SETTING is not declared as a text setting/,
    );
    assert.throws(() => flag({}, 'HOST' as never), /HOST is not declared as a boolean setting/);
  });

  test('the edit distance counts a swap of neighbours as one edit, and stops counting past the limit', () => {
    assert.equal(editDistance('DATABASE_URL', 'DATABASE_URL'), 0);
    assert.equal(editDistance('REDIS_ULR', 'REDIS_URL'), 1);
    assert.equal(editDistance('DATABSE_URL', 'DATABASE_URL'), 1);
    assert.equal(editDistance('APP_SECRT', 'APP_SECRET'), 1);
    assert.equal(editDistance('SMTP_URI', 'SMTP_URL'), 1);
    assert.equal(editDistance('DTAABSE_URL', 'DATABASE_URL'), 2);
    assert.equal(editDistance('HOSTNAME', 'HOST'), 3, 'past the limit of 2');
    assert.equal(editDistance('LOG_FORMAT', 'LOG_LEVEL', 10), 6, 'counted in full under a higher limit');
  });

  test('every variable the configuration code names is declared, and every declared one is read', () => {
    // The readers refuse a name not declared; this also finds a declared variable nothing reads.
    const src = path.join(import.meta.dirname, '..', 'src');
    const files = [
      path.join(src, 'config.ts'),
      ...fs
        .readdirSync(path.join(src, 'config'))
        .filter((name) => name.endsWith('.ts') && name !== 'declaration.ts')
        .map((name) => path.join(src, 'config', name)),
    ];
    const source = files.map((file) => fs.readFileSync(file, 'utf8')).join('\n');
    const read = new Set([...source.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)'/g)].map(([, name]) => name!));
    assert.deepEqual([...read].sort(), [...configurationVariables].sort());
  });
});

describe('BREACHED_PASSWORDS_URL', () => {
  test('is unset by default: no range API is asked', () => {
    assert.equal(loadConfig({}).breachedPasswordsUrl, undefined);
  });

  test('takes an https:// base URL, and http:// only on a loopback address', () => {
    const url = 'https://api.pwnedpasswords.com';
    assert.equal(loadConfig({ BREACHED_PASSWORDS_URL: url }).breachedPasswordsUrl, url);
    const local = 'http://127.0.0.1:8099/pwned';
    assert.equal(loadConfig({ BREACHED_PASSWORDS_URL: local }).breachedPasswordsUrl, local);
    assert.equal(refusal({ BREACHED_PASSWORDS_URL: 'http://pwned.example' }).variable, 'BREACHED_PASSWORDS_URL');
    assert.equal(refusal({ BREACHED_PASSWORDS_URL: 'ftp://pwned.example' }).variable, 'BREACHED_PASSWORDS_URL');
    assert.equal(refusal({ BREACHED_PASSWORDS_URL: `${url}/?key=1` }).variable, 'BREACHED_PASSWORDS_URL');
  });
});
