/**
 * Figure 8's same-query yardstick: the session check's database work and nothing else. Fastify, a
 * node-postgres pool of the service's size, the same SHA-256 of the cookie's session id and the
 * same `sessions JOIN customers` statement, named, on the service's own database; no limits, no
 * hooks, no schema. Run as a child process with SESSION_YARDSTICK_DATABASE_URL:
 * `node --import tsx bench/session-yardstick.ts`.
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

const app = Fastify({ logger: false });
app.get('/api/v1/customer/auth/session', async (request, reply) => {
  const sessionId = cookiePattern.exec(request.headers.cookie ?? '')?.[1];
  if (sessionId === undefined) return reply.code(401).send({ code: 'unauthenticated' });
  const { now, idleCutoff } = idleCutoffOf(systemClock);
  const found = await pool.query({
    // Named, as the service runs it: parsed and planned once per connection.
    name: 'session-check',
    text: findSessionCustomerSql,
    values: [hashSessionId(sessionId), now, idleCutoff, storeId],
  });
  const customer = found.rows[0];
  if (customer === undefined) return reply.code(401).send({ code: 'unauthenticated' });
  return { customer };
});

await app.listen({ port: Number(process.env['PORT'] ?? 0), host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => pool.end()));
