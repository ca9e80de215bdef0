import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { createStorefrontAuthClient, type StorefrontAuthClientOptions } from '../../packages/client/src/index.js';
import { StorefrontAuthError, type StorefrontAuthErrorCode } from '../../packages/client/src/answers.js';
import { startService, type ServiceProcess } from './service-process.js';

/**
 * A `serve` process for the enclosing `describe`, on the embedded default in a temporary data
 * folder, stopped (cleanly, or the suite fails) after its last test; and typed clients for it.
 */
export function useClientService(folderPrefix: string, env: Record<string, string> = {}) {
  let dataDir: string | undefined;
  let service: ServiceProcess | undefined;
  before(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), folderPrefix));
    service = await startService({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...env });
  });
  after(async () => {
    assert.equal(await service?.stop(), 0, 'the service stops cleanly');
    if (dataDir !== undefined) await fs.rm(dataDir, { recursive: true, force: true });
  });
  const running = (): ServiceProcess => {
    assert.ok(service, 'the service starts before the first test of its describe');
    return service;
  };
  return {
    get dataDir() {
      assert.ok(dataDir !== undefined, 'the data folder is made before the first test of its describe');
      return dataDir;
    },
    get service() {
      return running();
    },
    /** The Origin a browser on the service's own page would send, so the CSRF token is checked. */
    get origin() {
      return new URL(running().url).origin;
    },
    clientFor(options: Partial<StorefrontAuthClientOptions> = {}) {
      const url = running().url;
      return createStorefrontAuthClient({ baseUrl: url, headers: { origin: new URL(url).origin }, ...options });
    },
  };
}

/** Asserts the call was refused with this code and status, as a typed StorefrontAuthError. */
export async function refusedWith(promise: Promise<unknown>, code: StorefrontAuthErrorCode, status: number) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof StorefrontAuthError, String(error));
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    return true;
  });
}

/** Asks until `check` answers something, every 100 ms, for at most `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error('the condition did not come true in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
