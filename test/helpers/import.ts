import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { adminAppOf, adminCaller } from './admin.js';
import { toReply, type Harness, type Reply, type TestApp } from './harness.js';

/** Imports over the admin API: an upload, and its report once the import behind the 202 has ended. */

export const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
export const importUrl = '/admin/v1/stores/default/customers/import';
export async function startAdmin(harness: Pick<Harness, 'start'>) {
  const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
  const admin = await adminAppOf(t);
  return { t, admin, call: adminCaller(admin, adminToken) };
}

export async function upload(admin: FastifyInstance, lines: string[], query = ''): Promise<Reply> {
  return toReply(
    await admin.inject({
      method: 'POST',
      url: `${importUrl}${query}`,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/x-ndjson' },
      payload: `${lines.join('\n')}\n`,
    }),
  );
}

/** The import's report once it has ended: it runs behind the 202, so its report is asked until then. */
export async function finished(call: ReturnType<typeof adminCaller>, location: string): Promise<Reply> {
  for (let tries = 0; tries < 500; tries += 1) {
    const report = await call('GET', location);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    if (report.body.status !== 'running') return report;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the import did not end');
}

export async function imported(t: TestApp, admin: FastifyInstance, lines: string[], query = ''): Promise<Reply> {
  const started = await upload(admin, lines, query);
  assert.equal(started.status, 202, JSON.stringify(started.body));
  assert.equal(started.headers.location, `/admin/v1/stores/default/imports/${started.body.import_id}`);
  return finished(adminCaller(admin, adminToken), started.headers.location as string);
}
