import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { isAlive } from '../helpers/cli.js';
import { startService, type ServiceProcess, type SpawnOptions } from '../helpers/service-process.js';

/**
 * A killed embedded service must start again on its folder with every write it acknowledged:
 * the server it left running (or the stale lock of one that died with it) must not block the start.
 * One folder goes through every kind of kill in turn, so each restart also checks the earlier writes.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-crash-'));
const env = { DATA_DIR: dataDir };
const auth = '/api/v1/customer/auth';
const password = 'crash test 2024 pass';
const acknowledged: string[] = [];
const slow = { timeout: 180_000 };

after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function post(base: string, route: string, body: unknown): Promise<number> {
  const response = await fetch(`${base}${auth}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Registers customers; each one counts once the service has answered 201. */
async function write(service: ServiceProcess, label: string, count = 2): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const email = `${label}-${index}@example.com`;
    const status = await post(service.url, '/register', {
      name: 'Crash Test',
      email,
      password,
      password_confirmation: password,
    });
    assert.equal(status, 201);
    acknowledged.push(email);
  }
}

async function assertAllThere(service: ServiceProcess): Promise<void> {
  for (const email of acknowledged) {
    assert.equal(await post(service.url, '/login', { identity: email, password }), 200, `${email} is still there`);
  }
}

function serverPid(): number {
  return Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** Waits until the kernel has taken the killed processes down, as a container runtime does before a restart. */
async function gone(pids: number[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (pids.some(isAlive)) {
    if (Date.now() > deadline) throw new Error(`processes ${pids.filter(isAlive).join(', ')} still run`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function start(options: SpawnOptions = {}): Promise<ServiceProcess> {
  return startService(env, 120_000, options);
}

/** The service's node process inside `unshare -pf`: the one child of unshare. */
function nodeInNamespace(service: ServiceProcess): number {
  return Number(fs.readFileSync(`/proc/${service.child.pid}/task/${service.child.pid}/children`, 'utf8').trim());
}

/** SIGTERM to the service itself (unshare would answer one by killing it); unshare exits with its code. */
async function stopInNamespace(service: ServiceProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve));
  process.kill(nodeInNamespace(service), 'SIGTERM');
  return exited;
}

const canUnshare =
  process.getuid?.() === 0 && spawnSync('unshare', ['-pf', '--kill-child', '--mount-proc', 'true']).status === 0;

describe('the embedded service after a kill -9', { concurrency: false }, () => {
  test(
    'kill -9 of the node process alone: the next start stops the server it left and has every write',
    slow,
    async () => {
      const first = await start();
      await write(first, 'alone');
      const orphan = serverPid();
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
      assert.ok(isAlive(orphan), 'the server outlived its service');

      const second = await start();
      try {
        assert.equal(isAlive(orphan), false, 'the left-over server was stopped');
        assert.notEqual(serverPid(), orphan);
        await assertAllThere(second);
        await write(second, 'after-alone', 1);
      } finally {
        assert.equal(await second.stop(), 0);
      }
    },
  );

  test('kill -9 of the whole process group: the next start has every write', slow, async () => {
    const first = await start({ detached: true });
    await write(first, 'group');
    const server = serverPid();
    process.kill(-first.child.pid!, 'SIGKILL');
    await gone([first.child.pid!]);

    const second = await start();
    try {
      assert.equal(isAlive(server), false);
      await assertAllThere(second);
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });

  test(
    'kill -9 of the service and of its server at once: the stale lock does not block the next start',
    slow,
    async () => {
      const first = await start({ detached: true });
      await write(first, 'everything');
      const server = serverPid();
      process.kill(-first.child.pid!, 'SIGKILL');
      process.kill(-server, 'SIGKILL'); // the server leads its own group: this takes all its processes
      await gone([first.child.pid!, server]);
      assert.ok(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'the dead server left its lock');

      const second = await start();
      try {
        await assertAllThere(second);
      } finally {
        assert.equal(await second.stop(), 0);
      }
    },
  );

  test(
    "kill -9 of both, and the dead server's pid now belongs to another process: neither lock blocks the next start",
    slow,
    async () => {
      const first = await start({ detached: true });
      await write(first, 'reused-pid');
      const server = serverPid();
      process.kill(-first.child.pid!, 'SIGKILL');
      process.kill(-server, 'SIGKILL');
      await gone([first.child.pid!, server]);
      // After a container restart the dead postmaster's pid comes back as some other process. Both
      // lock files (postmaster.pid and the socket's) name it: point them at a live stranger of the
      // server's own account (PostgreSQL takes a pid it may not signal for someone else's: no clash).
      const folder = path.join(dataDir, 'postgres');
      const { uid, gid } = fs.statSync(folder);
      const stranger = spawn('sleep', ['300'], { cwd: os.tmpdir(), stdio: 'ignore', uid, gid });
      try {
        const locks = ['postmaster.pid', '.s.PGSQL.5432.lock'].map((name) => path.join(folder, name));
        for (const lock of locks) {
          assert.ok(fs.existsSync(lock), `the dead server left ${path.basename(lock)}`);
          const lines = fs.readFileSync(lock, 'utf8').split('\n');
          lines[0] = String(stranger.pid);
          fs.writeFileSync(lock, lines.join('\n'));
        }

        const second = await start();
        try {
          await assertAllThere(second);
        } finally {
          assert.equal(await second.stop(), 0);
        }
        assert.ok(isAlive(stranger.pid!), 'the process that got the pid was left alone');
      } finally {
        stranger.kill('SIGKILL');
      }
    },
  );

  test(
    'the service as PID 1 of its own pid namespace, killed and started again in a new one, has every write',
    { ...slow, skip: canUnshare ? false : 'needs root and unshare' },
    async () => {
      const wrapper = ['unshare', '-pf', '--kill-child', '--mount-proc'];
      const first = await start({ wrapper });
      await write(first, 'namespace');
      // Every process of the namespace, seen from here, to wait for their end after the kill.
      const namespace = fs.readlinkSync(`/proc/${nodeInNamespace(first)}/ns/pid`);
      const members = fs
        .readdirSync('/proc')
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return fs.readlinkSync(`/proc/${pid}/ns/pid`) === namespace;
          } catch {
            return false;
          }
        })
        .map(Number);
      assert.ok(members.length > 2, 'the service and its server run in the namespace');
      first.child.kill('SIGKILL'); // unshare --kill-child passes it to PID 1, and the namespace dies with it
      await gone([first.child.pid!, ...members]);

      const second = await start({ wrapper });
      try {
        await assertAllThere(second);
        await write(second, 'after-namespace', 1);
      } finally {
        assert.equal(await stopInNamespace(second), 0);
      }
      const third = await start();
      try {
        await assertAllThere(third);
      } finally {
        assert.equal(await third.stop(), 0);
      }
    },
  );
});
