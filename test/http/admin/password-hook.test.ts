import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { auditRows } from '../../helpers/audit.js';
import { loginFrom } from '../../helpers/customers.js';
import { registeredCustomer, useHarness, type TestApp } from '../../helpers/harness.js';
import { imported, startAdmin } from '../../helpers/import.js';

/**
 * The password migration hook: a customer an import brought without a hash signs in with the
 * password the store's old system knows. Every question reaches a real HTTP server here, which
 * checks its signature with the Standard Webhooks reference library.
 */

const hookPath = '/admin/v1/stores/default/password-hook';
const oldPassword = 'old shop password 1';
/** A Standard Webhooks secret made as the specification says: whsec_ and 32 random bytes in base64. */
const secret = `whsec_${randomBytes(32).toString('base64')}`;

interface Question {
  identity: string;
  password: string;
  external_id: string | null;
}

/** The old system: it verifies each question's signature and knows one password. */
class OldSystem {
  readonly questions: Question[] = [];
  readonly unsigned: string[] = [];
  /** How it answers; by default as the old shop would. */
  answer: (question: Question, response: http.ServerResponse) => void = (question, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ valid: question.password === oldPassword }));
  };
  private readonly server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        new Webhook(secret).verify(body, request.headers as Record<string, string>);
      } catch (error) {
        this.unsigned.push(String(error));
        response.writeHead(401).end();
        return;
      }
      const question = JSON.parse(body) as Question;
      this.questions.push(question);
      this.answer(question, response);
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/password-check`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function hashOf(t: TestApp, email: string): Promise<string | null> {
  const [row] = await t.db.query<{ password_hash: string | null }>(
    'SELECT password_hash FROM customers WHERE identity_value = $1',
    [email],
  );
  return row!.password_hash;
}

describe('the password migration hook', () => {
  const harness = useHarness();
  const servers: OldSystem[] = [];
  after(() => Promise.all(servers.map((server) => server.close())));
  async function oldSystem(): Promise<{ old: OldSystem; url: string }> {
    const old = new OldSystem();
    servers.push(old);
    return { old, url: await old.start() };
  }

  test('is set, read without its secret, replaced and removed over the admin API, each change audited', async () => {
    const { t, call } = await startAdmin(harness);
    const invalid = await call('PUT', hookPath, { url: 'http://old-shop.example/check', secret: 'hunter2' });
    assert.equal(invalid.status, 422);
    assert.deepEqual(Object.keys(invalid.body.errors).sort(), ['secret', 'url']);
    assert.match(invalid.body.errors.url[0], /must be https:\/\//);
    assert.match(invalid.body.errors.secret[0], /whsec_/);
    assert.equal((await call('GET', hookPath)).status, 404);

    const added = await call('PUT', hookPath, { url: 'https://old-shop.example/check', secret });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.deepEqual(Object.keys(added.body).sort(), ['created_at', 'updated_at', 'url']);
    const replaced = await call('PUT', hookPath, { url: 'https://old-shop.example/v2/check', secret });
    assert.equal(replaced.status, 200);
    const read = await call('GET', hookPath);
    assert.equal(read.body.url, 'https://old-shop.example/v2/check');
    assert.ok(!JSON.stringify(read.body).includes(secret.slice(6)), 'the secret is never answered');
    const [stored] = await t.db.query<{ sealed_secret: string }>('SELECT sealed_secret FROM store_password_hooks');
    assert.ok(!stored!.sealed_secret.includes(secret.slice(6)), 'nor stored as given');

    assert.equal((await call('DELETE', hookPath)).status, 200);
    assert.equal((await call('GET', hookPath)).status, 404);
    assert.equal((await call('DELETE', hookPath)).status, 404);
    const changes = (await auditRows(t, 'store.changed')).map((row) =>
      Object.keys(row.details).find((k) => k.startsWith('password_hook')),
    );
    assert.deepEqual(changes, ['password_hook_added', 'password_hook_replaced', 'password_hook_removed']);
  });

  test('signs in an imported customer without a hash with the old password, which becomes an argon2id hash; the hook is asked about no one else', async () => {
    const { t, admin, call } = await startAdmin(harness);
    const { old, url } = await oldSystem();
    await imported(t, admin, [JSON.stringify({ email: 'ada@example.com', verified: true, external_id: 'wc-42' })]);
    const native = await registeredCustomer(t, { email: 'grace@example.com' });

    // Without a hook the account has no password that works.
    assert.equal((await loginFrom(t, '198.51.100.1', 'ada@example.com', oldPassword)).status, 401);
    assert.equal((await call('PUT', hookPath, { url, secret })).status, 201);

    assert.equal((await loginFrom(t, '198.51.100.2', 'nobody@example.com', oldPassword)).status, 401);
    assert.equal((await loginFrom(t, '198.51.100.3', native.identity, 'wrong password 1')).status, 401);
    assert.equal(old.questions.length, 0, 'never asked about an unknown identity or an account with a password');

    assert.equal((await loginFrom(t, '198.51.100.4', 'ada@example.com', 'wrong password 1')).status, 401);
    assert.deepEqual(old.questions, [
      { identity: 'ada@example.com', password: 'wrong password 1', external_id: 'wc-42' },
    ]);
    assert.equal(await hashOf(t, 'ada@example.com'), null, 'a wrong password sets nothing');

    const signedIn = await loginFrom(t, '198.51.100.5', 'ada@example.com', oldPassword);
    assert.equal(signedIn.status, 200);
    assert.match((await hashOf(t, 'ada@example.com')) ?? '', /^\$argon2id\$/);
    assert.equal((await loginFrom(t, '198.51.100.6', 'ada@example.com', oldPassword)).status, 200);
    assert.equal(old.questions.length, 2, 'once the password is hashed here the hook is not asked again');
    assert.deepEqual(old.unsigned, [], 'every question carried a valid signature');
  });

  test('only 200 {"valid": true} accepts: an error, a redirect (not followed), a string "true" or an endless answer is a wrong password', async () => {
    const { t, admin, call } = await startAdmin(harness);
    const { old, url } = await oldSystem();
    const { old: elsewhere, url: elsewhereUrl } = await oldSystem();
    await imported(t, admin, [JSON.stringify({ email: 'ada@example.com', verified: true })]);
    assert.equal((await call('PUT', hookPath, { url, secret })).status, 201);
    const answers: Array<(response: http.ServerResponse) => void> = [
      (response) => response.writeHead(500).end(),
      (response) => response.writeHead(307, { location: elsewhereUrl }).end(),
      (response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"valid":"true"}'),
      (response) =>
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(`{"valid":true,"pad":"${'x'.repeat(10_000)}"}`),
      (response) => response.writeHead(201, { 'content-type': 'application/json' }).end('{"valid":true}'),
    ];
    for (const [i, answer] of answers.entries()) {
      old.answer = (_question, response) => answer(response);
      const login = await loginFrom(t, `198.51.100.${i + 1}`, 'ada@example.com', oldPassword);
      assert.equal(login.status, 401, `answer ${i}`);
    }
    assert.equal(old.questions.length, answers.length);
    assert.equal(elsewhere.questions.length + elsewhere.unsigned.length, 0, 'the redirect was not followed');
    assert.equal(await hashOf(t, 'ada@example.com'), null);
    const warned = t.logs.filter(
      (line) => line['msg'] === 'password migration hook gave no answer that accepts the password',
    );
    assert.ok(warned.length >= 2, 'the operator sees what went wrong');
    assert.ok(!JSON.stringify(t.logs).includes(oldPassword), 'never the password');

    // A secret sealed under an APP_SECRET the service no longer has: no question is sent, unsigned or otherwise.
    await t.db.query('UPDATE store_password_hooks SET sealed_secret = $1', [Buffer.alloc(60, 7).toString('base64url')]);
    const asked = old.questions.length + old.unsigned.length;
    assert.equal((await loginFrom(t, '198.51.100.99', 'ada@example.com', oldPassword)).status, 401);
    assert.equal(old.questions.length + old.unsigned.length, asked);
    assert.ok(t.logs.some((line) => line['msg'] === 'password migration hook unusable'));
  });
});
