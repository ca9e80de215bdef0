import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { sparePort } from '../helpers/ports.js';
import { repoRoot } from '../helpers/service-process.js';

/**
 * The webhooks guide's receiver (docs/guides/webhooks.md), run as written: only its import is pointed at the client's source
 * (the package is not installed in this repository) and its port at a spare one. It must print an
 * event signed with its secret once, even when it comes twice, and refuse one signed otherwise.
 */

function guideReceiver(): string {
  const guide = fs.readFileSync(path.join(repoRoot, 'docs/guides/webhooks.md'), 'utf8');
  const start = guide.indexOf('A receiver in 20 lines');
  assert.ok(start >= 0, 'the webhooks guide has its receiver');
  const block = /```js\n([\s\S]*?)```/.exec(guide.slice(start));
  assert.ok(block !== null, 'the receiver is a js block');
  const code = block[1]!;
  assert.ok(code.split('\n').length <= 24, 'about 20 lines');
  return code;
}

describe("the webhooks guide's receiver", () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-guide-receiver-'));
  after(() => fs.rmSync(folder, { recursive: true, force: true }));

  test('prints a signed event once, whatever its retries, and answers 400 to a forged one', async () => {
    const port = await sparePort();
    const backend = path.join(repoRoot, 'packages/client/src/backend.ts');
    const code = guideReceiver()
      .replace("'@storefront-auth/client/backend'", JSON.stringify(backend))
      .replace('listen(8080)', `listen(${port}, '127.0.0.1', () => console.log('listening'))`);
    const file = path.join(folder, 'receiver.mts');
    fs.writeFileSync(file, code);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: repoRoot,
      env: { ...process.env, STOREFRONT_WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let output = '';
      child.stdout.setEncoding('utf8');
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: string) => {
          output += chunk;
          if (output.includes('listening\n')) resolve();
        });
        child.once('exit', (exitCode) => reject(new Error(`the receiver exited with ${exitCode}`)));
      });
      const body = JSON.stringify({
        type: 'customer.registered',
        timestamp: new Date().toISOString(),
        data: { store_id: 'default', customer: { id: 'c0ffee00-0000-4000-8000-000000000001' } },
      });
      const send = async (signer: Webhook) => {
        const at = new Date();
        const answer = await fetch(`http://127.0.0.1:${port}/`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': 'evt_guide',
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': signer.sign('evt_guide', at, body),
          },
          body,
        });
        return answer.status;
      };
      assert.equal(await send(new Webhook(secret)), 204);
      assert.equal(await send(new Webhook(secret)), 204, 'a retry is answered, and not handled again');
      assert.equal(await send(new Webhook(`whsec_${randomBytes(32).toString('base64')}`)), 400);
      // Everything it printed, once it has exited: its standard output is closed then.
      const closed = new Promise((resolve) => child.once('close', resolve));
      child.kill();
      await closed;
      const printed = output.split('\n').filter((line) => line.startsWith('customer.'));
      assert.deepEqual(printed, ['customer.registered c0ffee00-0000-4000-8000-000000000001']);
    } finally {
      child.kill();
    }
  });
});
