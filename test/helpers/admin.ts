import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/http/admin/app.js';
import { toReply, type Reply, type TestApp } from './harness.js';

/** The admin app on the test app's services, as serve() builds it beside the customer app, closed with it. */
export async function adminAppOf(t: TestApp): Promise<FastifyInstance> {
  const admin = await buildAdminApp(t.services);
  await admin.ready();
  const close = t.close;
  t.close = async () => {
    await admin.close();
    await close();
  };
  return admin;
}

export type AdminMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Calls the admin app with a bearer token, a JSON body when given: the answer. */
export function adminCaller(admin: FastifyInstance, token: string) {
  return async (method: AdminMethod, url: string, body?: unknown): Promise<Reply> =>
    toReply(
      await admin.inject({
        method,
        url,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      }),
    );
}
