import { withService, type BenchContext, type Row } from '../context.js';
import { sessionConnections, signedInCookie } from '../customer-load.js';
import { startBareFastify, startSessionYardstick } from '../servers.js';
import { versusBare } from './01-framework-overhead.js';

/**
 * Figure 8: the session check, what every signed-in page view costs: 8a against bare Fastify, 8b
 * against a yardstick doing exactly its database work and nothing else (bench/session-yardstick.ts).
 */
export async function figureSessionCheck(context: BenchContext): Promise<Row[]> {
  const bare = await startBareFastify();
  try {
    return await withService(context, '8', async (service) => {
      const check = {
        figure: '8',
        path: '/api/v1/customer/auth/session',
        label: `GET /customer/auth/session req/s (session check), ${sessionConnections} connections`,
        connections: sessionConnections,
        headers: { cookie: await signedInCookie(context, service) },
      };
      const rows = [
        await versusBare(context, service, bare, { ...check, id: '8a', barePath: '/api/v1/health/live', goal: 0.3 }),
      ];
      const { env, serverUrl, serviceDatabase } = context.backend;
      // Through PgBouncer (scaled) the service runs its statements unnamed, and so does the yardstick.
      const sameQuery = await startSessionYardstick(env['DATABASE_URL'] ?? serverUrl(serviceDatabase), {
        named: context.mode !== 'scaled',
      });
      try {
        const spec = { ...check, id: '8b', barePath: check.path, goal: 0.85, maxMainMs: 0.1 };
        const yardstick = { bareLabel: 'the same query in bare Fastify', headersToBare: true };
        rows.push(await versusBare(context, service, sameQuery, { ...spec, ...yardstick }));
      } finally {
        await sameQuery.stop();
      }
      return rows;
    });
  } finally {
    await bare.stop();
  }
}
