import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { listAudit } from '../../src/audit.js';
import { runAdminCommand, type AdminCommand } from '../../src/cli/commands.js';
import { auth, useHarness, registeredCustomer, type TestApp } from '../helpers/harness.js';
import { cliEnv, runCommand, tempFolders } from '../helpers/cli.js';
import { defaultStore } from '../helpers/database.js';

const folders = tempFolders('sfa-cli-sessions-');

async function signIn(t: TestApp, customer: { identity: string; password: string }): Promise<string> {
  const reply = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
  assert.equal(reply.status, 200);
  return reply.cookies.find((cookie) => cookie.name === 'storefront_session')!.value;
}

describe('operator commands for sessions', () => {
  const harness = useHarness();
  after(async () => {
    folders.removeAll();
  });

  const admin = (t: TestApp, command: AdminCommand) =>
    runAdminCommand({ db: t.db, clock: t.clock, config: t.services.config }, command);

  test('each command needs an identity: exit 2 naming what is missing', { timeout: 60_000 }, async () => {
    for (const command of ['sessions', 'revoke-sessions']) {
      const result = await runCommand(['customer', command], cliEnv(folders.fresh()));
      assert.equal(result.code, 2);
      assert.match(result.stderr, new RegExp(`customer ${command} needs an identity`));
      assert.equal(result.stdout, '');
    }
  });

  test('customer sessions lists the live sessions newest first, none current', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    await signIn(t, ada);
    t.clock.advance(60);
    await signIn(t, ada);
    const result = await admin(t, { name: 'customer.sessions', identity: 'ADA@example.com' });
    assert.equal(result.ok, true, result.error);
    const sessions = result.output as Array<{ id: string; current: boolean; created_at: string }>;
    assert.equal(sessions.length, 2);
    assert.equal(sessions[0]!.created_at, t.clock.now().toISOString(), 'newest first');
    assert.ok(sessions.every((session) => session.current === false));
  });

  test('customer show counts only live sessions: one idle for 14 days is ended though not expired', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    const day = 24 * 60 * 60;
    await signIn(t, ada);
    t.clock.advance(13 * day);
    const recent = await signIn(t, ada);
    t.clock.advance(day + 1);
    const shown = await admin(t, { name: 'customer.show', identity: ada.identity });
    assert.equal(shown.ok, true, shown.error);
    assert.equal((shown.output as { active_sessions: number }).active_sessions, 1, 'the idle session is not counted');
    const listed = await admin(t, { name: 'customer.sessions', identity: ada.identity });
    assert.equal((listed.output as unknown[]).length, 1, 'the count agrees with the listing');
    assert.equal((await t.get(`${auth}/session`, { cookie: `storefront_session=${recent}` })).status, 200);
  });

  test('customer revoke-sessions signs the customer out everywhere, only them, audited as the operator', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    const grace = await registeredCustomer(t, { email: 'grace@example.com' });
    const adaSessions = [await signIn(t, ada), await signIn(t, ada)];
    const graceSession = await signIn(t, grace);
    const result = await admin(t, { name: 'customer.revoke-sessions', identity: ada.identity });
    assert.deepEqual(result, { ok: true, output: { status: 'revoked', count: 2 } });
    for (const session of adaSessions) {
      const reply = await t.get(`${auth}/session`, { cookie: `storefront_session=${session}` });
      assert.equal(reply.status, 401);
    }
    assert.equal((await t.get(`${auth}/session`, { cookie: `storefront_session=${graceSession}` })).status, 200);
    const [event] = await listAudit(defaultStore(t.db), { customerId: ada.id, event: 'session.revoked' });
    assert.deepEqual(event?.details, { count: '2', by: 'operator' });
    assert.equal(event?.client_address, null);
  });

  test('an unknown identity is an error naming it', async () => {
    const t = await harness.start();
    await registeredCustomer(t);
    for (const name of ['customer.sessions', 'customer.revoke-sessions'] as const) {
      const result = await admin(t, { name, identity: 'ghost@example.com' });
      assert.deepEqual(result, { ok: false, error: 'no customer with email ghost@example.com' });
    }
  });

  test('from the command line: JSON on stdout, exit 0', { timeout: 60_000 }, async () => {
    const t = await harness.start();
    // The command runs on the real clock: the sessions must be live by it.
    t.clock.advance(Math.ceil((Date.now() - t.clock.now().getTime()) / 1000));
    const ada = await registeredCustomer(t);
    await signIn(t, ada);
    const env = cliEnv(folders.fresh(), { DATABASE_URL: harness.databaseUrl, APP_SECRET: 'c'.repeat(40) });
    const listed = await runCommand(['customer', 'sessions', ada.identity], env);
    assert.equal(listed.code, 0, listed.stderr);
    const sessions = JSON.parse(listed.stdout) as Array<{ id: string }>;
    assert.equal(sessions.length, 1);
    const revoked = await runCommand(['customer', 'revoke-sessions', ada.identity], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.deepEqual(JSON.parse(revoked.stdout), { status: 'revoked', count: 1 });
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    assert.equal(row?.n, 0);
  });

  test('customer block ends the sessions and refuses the right password until unblock; customer unblock lets them in', async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    const session = await signIn(t, ada);
    const adminOf = (command: AdminCommand) =>
      runAdminCommand({ db: t.db, clock: t.clock, config: t.services.config, keys: t.services.keys }, command);
    const blocked = await adminOf({ name: 'customer.block', identity: ada.identity, reason: 'fraud', until: null });
    assert.deepEqual(blocked, { ok: true, output: { id: ada.id, status: 'blocked' } });
    assert.equal((await t.get(`${auth}/session`, { cookie: `storefront_session=${session}` })).status, 401);
    const refused = await t.post(`${auth}/login`, { identity: ada.identity, password: ada.password });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'account_blocked');
    const past = new Date(t.clock.now().getTime() - 1000);
    assert.deepEqual(await adminOf({ name: 'customer.block', identity: ada.identity, reason: 'x', until: past }), {
      ok: false,
      error: '--until must be in the future',
    });
    assert.deepEqual(await adminOf({ name: 'customer.unblock', identity: ada.identity }), {
      ok: true,
      output: { id: ada.id, status: 'unblocked' },
    });
    await signIn(t, ada);
    const events = await listAudit(defaultStore(t.db), { customerId: ada.id });
    assert.deepEqual(
      events.filter((event) => event.event.startsWith('customer.')).map((event) => [event.event, event.details]),
      [
        ['customer.unblocked', { by: 'operator' }],
        ['customer.blocked', { by: 'operator' }],
        ['customer.verified', events.find((event) => event.event === 'customer.verified')?.details],
        ['customer.registered', events.find((event) => event.event === 'customer.registered')?.details],
      ].filter(([, details]) => details !== undefined),
    );
  });

  test(
    'customer block needs a reason and a well-formed --until: exit 2 naming what is wrong',
    { timeout: 60_000 },
    async () => {
      const env = cliEnv(folders.fresh());
      const noReason = await runCommand(['customer', 'block', 'ada@example.com'], env);
      assert.equal(noReason.code, 2);
      assert.match(noReason.stderr, /customer block needs --reason/);
      const badUntil = await runCommand(
        ['customer', 'block', 'ada@example.com', '--reason', 'x', '--until', 'tomorrow'],
        env,
      );
      assert.equal(badUntil.code, 2);
      assert.match(badUntil.stderr, /--until must be an ISO 8601 date and time/);
    },
  );
});
