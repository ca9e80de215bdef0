import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runningServer, serverFolder, waitForExit } from '../../src/storage/embedded-postgres-folder.js';
import { createScratchDatabase, testBackends } from './database.js';
import { deleteKeys, testKeyPrefix } from './redis.js';

/** Where a service process under test keeps its data, as environment for it and its command line. */
export interface ServiceBackend {
  env: Record<string, string>;
  remove(): Promise<void>;
}

/**
 * The backend of this pass for a service started as a process: with DATABASE_URL (and REDIS_URL)
 * set, a scratch database (and a Redis key prefix) of its own on those servers; else a data folder
 * of its own, where the service runs its embedded PostgreSQL. Either is removed afterwards, and the
 * same `env` reaches the running service from `storefront-auth …` commands.
 */
export async function serviceBackend(label: string): Promise<ServiceBackend> {
  if (testBackends.database === 'embedded') {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `sfa-${label}-`));
    const remove = async () => {
      // A service that was killed or cut its drain short leaves its server finishing a fast
      // shutdown, still writing into the folder: the folder is removed once that server is gone.
      const left = runningServer(serverFolder(dataDir));
      if (left !== undefined) await waitForExit(left);
      await fs.rm(dataDir, { recursive: true, force: true });
    };
    return { env: { DATA_DIR: dataDir }, remove };
  }
  const scratch = await createScratchDatabase(`sfa_test_${label.replace(/\W/g, '_')}`);
  const env: Record<string, string> = { DATABASE_URL: scratch.url, APP_SECRET: 's'.repeat(40) };
  const redis = process.env['REDIS_URL'];
  if (redis === undefined) return { env, remove: () => scratch.drop() };
  // A key prefix of its own, deleted afterwards: other files share this Redis at the same time.
  const keyPrefix = testKeyPrefix(label);
  env['REDIS_URL'] = redis;
  env['REDIS_KEY_PREFIX'] = keyPrefix;
  return {
    env,
    async remove() {
      try {
        await deleteKeys(keyPrefix, redis);
      } finally {
        await scratch.drop();
      }
    },
  };
}
