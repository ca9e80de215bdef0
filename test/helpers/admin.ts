import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/http/admin/app.js';
import type { TestApp } from './harness.js';

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
