import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../src/storage/embedded-postgres.js';

/** The variable through which `npm test` hands its one embedded server to every test file. */
export const testServerUrlVariable = 'STOREFRONT_TEST_SERVER_URL';

/**
 * The test run's server: more connections (two files at once, each with pools and spawned
 * services), and no flushing to disk, since every database on it is thrown away after its file.
 * The service's own server keeps fsync on; the crash tests start that one.
 */
const testServerSettings = {
  max_connections: '200',
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
};

export interface TestServer {
  server: EmbeddedServer;
  remove(): Promise<void>;
}

/** An embedded server in a temporary folder, removed with its folder. */
export async function startTestServer(): Promise<TestServer> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-pg-'));
  try {
    const server = await startEmbeddedPostgres(folder, { settings: testServerSettings });
    return {
      server,
      async remove() {
        await server.stop();
        fs.rmSync(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}
