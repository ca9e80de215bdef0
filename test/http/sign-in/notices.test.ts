import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { listKnownDevices } from '../../../src/auth/tables/known-devices.js';
import type { OutgoingMessage } from '../../../src/delivery/message.js';
import { prune } from '../../../src/janitor.js';
import { defaultRetention } from '../../../src/config.js';
import { cliEnv, runCommand, tempFolders } from '../../helpers/cli.js';
import { recording, type Recorded } from '../../helpers/recording-db.js';
import { auth, useHarness, registeredCustomer, testSecret, type TestApp } from '../../helpers/harness.js';
import { defaultStore } from '../../helpers/database.js';

const folders = tempFolders('sfa-sign-in-notices-');
const day = 24 * 60 * 60;

const firefoxOnWindows = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0';
const firefoxOnWindowsUpdated = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0';
const chromeOnMac =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

interface Device {
  userAgent: string;
  address: string;
}

const home: Device = { userAgent: firefoxOnWindows, address: '198.51.100.23' };

async function login(t: TestApp, customer: { identity: string; password: string }, device: Device) {
  const response = await t.app.inject({
    method: 'POST',
    url: `${auth}/login`,
    remoteAddress: device.address,
    headers: { 'content-type': 'application/json', 'user-agent': device.userAgent },
    payload: JSON.stringify({ identity: customer.identity, password: customer.password }),
  });
  return response.statusCode;
}

/** Logs in (which must succeed) and returns the new sign-in notices that followed. */
async function noticesAfterLogin(
  t: TestApp,
  customer: { identity: string; password: string },
  device: Device,
): Promise<OutgoingMessage[]> {
  await t.deliver();
  assert.equal(await login(t, customer, device), 200);
  return (await t.deliver()).filter((message) => message.purpose === 'new_sign_in');
}

async function setNotices(t: TestApp, on: boolean, databaseUrl: string) {
  const result = await runCommand(
    ['store', 'set', '--sign-in-notices', String(on)],
    cliEnv(folders.fresh(), { DATABASE_URL: databaseUrl, APP_SECRET: testSecret, DELIVERY_LOG_ALLOWED: 'true' }),
  );
  assert.equal(result.code, 0, result.stderr);
  t.services.store.invalidate();
  return JSON.parse(result.stdout) as { settings: Record<string, boolean> };
}

function noticeCounter(t: TestApp, outcome: string): Promise<number> {
  return t.services.metrics.registry
    .getSingleMetric('storefront_sign_in_notices_total')!
    .get()
    .then((metric) => metric.values.find((value) => value.labels['outcome'] === outcome)?.value ?? 0);
}

describe('the new sign-in notice', () => {
  const harness = useHarness();
  after(async () => {
    folders.removeAll();
  });

  test('the first login of a new account sends none, and remembers the device as family and /24 only', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    assert.deepEqual(await noticesAfterLogin(t, ada, home), []);
    assert.equal(await noticeCounter(t, 'first_sign_in'), 1);
    const devices = await listKnownDevices(defaultStore(t.db), ada.id);
    assert.deepEqual(
      devices.map(({ family, masked_address }) => ({ family, masked_address })),
      [{ family: 'Firefox on Windows', masked_address: '198.51.100.0/24' }],
    );
  });

  test('a second login from the same device sends none, even from another address in the /24 and a newer version', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    assert.deepEqual(await noticesAfterLogin(t, ada, home), []);
    assert.deepEqual(
      await noticesAfterLogin(t, ada, { userAgent: firefoxOnWindowsUpdated, address: '198.51.100.200' }),
      [],
    );
    assert.equal(await noticeCounter(t, 'known_device'), 2);
    assert.equal(await noticeCounter(t, 'sent'), 0);
  });

  test('another browser family from the same network sends one notice, and only once', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    const laptop = { userAgent: chromeOnMac, address: home.address };
    const notices = await noticesAfterLogin(t, ada, laptop);
    assert.equal(notices.length, 1);
    assert.equal(notices[0]!.to, ada.identity);
    assert.equal(notices[0]!.channel, 'email');
    assert.match(notices[0]!.content.text, /Chrome on macOS/);
    assert.deepEqual(await noticesAfterLogin(t, ada, laptop), [], 'the device is known from then on');
    assert.equal(await noticeCounter(t, 'sent'), 1);
  });

  test('a sign-in from a new device reads and records its history in one statement', async () => {
    const log: Recorded[] = [];
    const t = await harness.start({ overrides: { db: recording(harness.db, log) } });
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    log.length = 0;
    assert.equal(await login(t, ada, { userAgent: chromeOnMac, address: home.address }), 200);
    const opened = log.findIndex((entry) => entry.sql.includes('INSERT INTO sessions'));
    assert.ok(opened >= 0, 'the login opened a session');
    // After the statement that opens the session (and refreshes a known device): the notice's
    // transaction, whose device history is a single round trip.
    const notice = log.slice(opened + 1);
    assert.equal(notice[0]?.sql, 'BEGIN');
    assert.equal(
      notice.filter((entry) => entry.sql.includes('known_devices')).length,
      1,
      notice.map((e) => e.sql).join('\n---\n'),
    );
    assert.equal((await t.deliver()).filter((message) => message.purpose === 'new_sign_in').length, 1);
  });

  test('the same family from another /24 sends one notice', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    const notices = await noticesAfterLogin(t, ada, { userAgent: firefoxOnWindows, address: '198.51.101.23' });
    assert.equal(notices.length, 1);
    assert.match(notices[0]!.content.text, /198\.51\.101\.0\/24/);
  });

  test('IPv6: the /48 is the network; another /48 sends one notice', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, { userAgent: firefoxOnWindows, address: '2001:db8:1:2::5' });
    assert.deepEqual(await noticesAfterLogin(t, ada, { userAgent: firefoxOnWindows, address: '2001:db8:1:ff::9' }), []);
    const notices = await noticesAfterLogin(t, ada, { userAgent: firefoxOnWindows, address: '2001:db8:2::5' });
    assert.equal(notices.length, 1);
    assert.match(notices[0]!.content.text, /2001:db8:2::\/48/);
  });

  test('a wrong password from a new device sends none and records nothing', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    await t.deliver();
    const stranger = { userAgent: chromeOnMac, address: '203.0.113.9' };
    assert.equal(await login(t, { identity: ada.identity, password: 'not the password at all' }, stranger), 401);
    assert.deepEqual(
      (await t.deliver()).filter((message) => message.purpose === 'new_sign_in'),
      [],
    );
    assert.equal((await listKnownDevices(defaultStore(t.db), ada.id)).length, 1);
  });

  test('the message: store name, when, the device in words, the masked address, reset advice, no links', async () => {
    const t = await harness.start({ env: { STORE_NAME: 'Corner Shop' } });
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    t.clock.advance(60);
    const [notice] = await noticesAfterLogin(t, ada, { userAgent: chromeOnMac, address: '203.0.113.77' });
    assert.ok(notice !== undefined);
    const when = `${t.clock.now().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    assert.equal(notice.content.subject, 'New sign-in to your Corner Shop account');
    for (const part of [notice.content.text, notice.content.html]) {
      assert.match(part, /Corner Shop/);
      assert.ok(part.includes(when), `names the time ${when}: ${part}`);
      assert.match(part, /Chrome on macOS/);
      assert.match(part, /203\.0\.113\.0\/24/);
      assert.match(part, /If this was not you, reset your password/);
      assert.doesNotMatch(part, /203\.0\.113\.77/, 'never the full address');
      assert.doesNotMatch(part, /https?:|www\.|href=/i, 'no links');
      assert.doesNotMatch(part, /Mozilla|AppleWebKit/, 'never the raw user-agent');
    }
  });

  test('on a phone store the notice is an SMS with the device, the network and the advice', async () => {
    const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
    const ada = await registeredCustomer(t, { email: undefined, phone: '+14155550123' });
    await noticesAfterLogin(t, ada, home);
    const [notice] = await noticesAfterLogin(t, ada, { userAgent: chromeOnMac, address: '203.0.113.77' });
    assert.ok(notice !== undefined);
    assert.equal(notice.channel, 'sms');
    assert.equal(notice.to, '+14155550123');
    assert.match(notice.content.text, /Chrome on macOS/);
    assert.match(notice.content.text, /203\.0\.113\.0\/24/);
    assert.match(notice.content.text, /reset your password/);
    assert.doesNotMatch(notice.content.text, /https?:|www\./i);
  });

  test(
    'store set --sign-in-notices false stops them, devices are still learnt, true brings them back',
    {
      timeout: 120_000,
    },
    async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      await noticesAfterLogin(t, ada, home);

      const off = await setNotices(t, false, harness.databaseUrl);
      assert.equal(off.settings['auth.sign_in_notices'], false);
      const laptop = { userAgent: chromeOnMac, address: home.address };
      assert.deepEqual(await noticesAfterLogin(t, ada, laptop), []);
      assert.equal(await noticeCounter(t, 'off'), 1);

      const on = await setNotices(t, true, harness.databaseUrl);
      assert.equal(on.settings['auth.sign_in_notices'], true);
      assert.deepEqual(await noticesAfterLogin(t, ada, laptop), [], 'learnt while notices were off');
      assert.equal((await noticesAfterLogin(t, ada, { userAgent: chromeOnMac, address: '203.0.113.1' })).length, 1);
    },
  );

  test(
    'store show names the setting, on by default; a bad value exits 2 naming the flag',
    { timeout: 60_000 },
    async () => {
      await harness.start(); // the store row, as the service makes it
      const env = cliEnv(folders.fresh(), {
        DATABASE_URL: harness.databaseUrl,
        APP_SECRET: testSecret,
        DELIVERY_LOG_ALLOWED: 'true',
      });
      const shown = await runCommand(['store', 'show'], env);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(JSON.parse(shown.stdout).settings['auth.sign_in_notices'], true);

      const bad = await runCommand(['store', 'set', '--sign-in-notices', 'maybe'], env);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--sign-in-notices must be one of true, false/);
      assert.equal(bad.stdout, '');
    },
  );

  test('a device unseen for 90 days is new again, and the janitor forgets it after 90 days', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    t.clock.advance(90 * day + 1);
    const removed = await prune({ db: t.db, clock: t.clock, retention: defaultRetention });
    assert.equal(removed.known_devices, 1);
    assert.deepEqual(await listKnownDevices(defaultStore(t.db), ada.id), []);
    // The account is older than the look-back now: an idle account's next sign-in is worth a notice.
    assert.equal((await noticesAfterLogin(t, ada, home)).length, 1);
  });

  test('a device seen 89 days ago is still known', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    t.clock.advance(89 * day);
    assert.equal((await prune({ db: t.db, clock: t.clock, retention: defaultRetention })).known_devices, 0);
    assert.deepEqual(await noticesAfterLogin(t, ada, home), []);
  });

  test('a live session from the same device counts as seen, even with no device on record', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await noticesAfterLogin(t, ada, home);
    // As for sessions opened before devices were recorded.
    await t.db.query('DELETE FROM known_devices');
    assert.deepEqual(await noticesAfterLogin(t, ada, home), []);
    assert.equal((await noticesAfterLogin(t, ada, { userAgent: chromeOnMac, address: '203.0.113.1' })).length, 1);
  });

  test('a failure to queue the notice leaves the login standing, logged and counted', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await t.db.exec(`
      CREATE OR REPLACE FUNCTION sfa_test_refuse_device() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'known_devices refused for the test'; END $$;
      CREATE TRIGGER sfa_test_refuse_device BEFORE INSERT OR UPDATE ON known_devices
        FOR EACH ROW EXECUTE FUNCTION sfa_test_refuse_device();`);
    try {
      assert.equal(await login(t, ada, home), 200);
    } finally {
      await t.db.exec(`DROP TRIGGER sfa_test_refuse_device ON known_devices;
        DROP FUNCTION sfa_test_refuse_device();`);
    }
    assert.equal(await noticeCounter(t, 'failed'), 1);
    assert.ok(t.logs.some((line) => line['msg'] === 'the new sign-in notice could not be queued'));
  });
});
