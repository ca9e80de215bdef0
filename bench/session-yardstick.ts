/**
 * Figure 8's same-query yardstick: the session check's database work and nothing else. Fastify, a
 * node-postgres pool of the service's size, the same SHA-256 of the cookie's session id and the
 * same `sessions JOIN customers` statement on the service's own database; no limits, no hooks, no
 * schema. The statement is named, as the service names it, unless SESSION_YARDSTICK_UNNAMED is set:
 * behind a transaction-mode pooler the service gives names up, and the pooler refuses them. Run as
 * a child process with SESSION_YARDSTICK_DATABASE_URL: `node --import tsx bench/session-yardstick.ts`.
 */
import Fastify from 'fastify';
import pg from 'pg';
import { systemClock } from '../src/clock.js';
import { findSessionCustomerSql, hashSessionId, idleCutoffOf } from '../src/auth/tables/sessions.js';
import { defaultDatabasePoolSize } from '../src/storage/postgres.js';

const pool = new pg.Pool({
  connectionString: process.env['SESSION_YARDSTICK_DATABASE_URL'],
  max: defaultDatabasePoolSize,
  application_name: 'session-yardstick',
});
const { rows } = await pool.query<{ id: string }>('SELECT id FROM stores ORDER BY created_at LIMIT 1');
const storeId = rows[0]!.id;
const cookieName = process.env['SESSION_COOKIE_NAME'] ?? 'storefront_session';
const cookiePattern = new RegExp(`(?:^|;\\s*)${cookieName}=([^;]+)`);

const named = process.env['SESSION_YARDSTICK_UNNAMED'] === undefined;

const app = Fastify({ logger: false });
app.get('/api/v1/customer/auth/session', async (request, reply) => {
  const sessionId = cookiePattern.exec(request.headers.cookie ?? '')?.[1];
  if (sessionId === undefined) return reply.code(401).send({ code: 'unauthenticated' });
  const { now, idleCutoff } = idleCutoffOf(systemClock);
  const found = await pool.query({
    // Named, as the service runs it without a pooler: parsed and planned once per connection.
    ...(named ? { name: 'session-check' } : {}),
    text: findSessionCustomerSql,
    values: [hashSessionId(sessionId), now, idleCutoff, storeId],
  });
  const customer = found.rows[0];
  if (customer === undefined) return reply.code(401).send({ code: 'unauthenticated' });
  return { customer };
});

await app.listen({ port: Number(process.env['PORT'] ?? 0), host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => pool.end()));
