/**
 * Figures 2 and 3's yardstick, a child process: the most an HTTP login or registration can do here
 * with the service's own hashing threads and parameters, with no database behind it, so the ratio
 * shows what the service adds to the hashing.
 */
import { randomBytes } from 'node:crypto';
import cookie from '@fastify/cookie';
import { Algorithm } from '@node-rs/argon2';
import Fastify from 'fastify';
import { sharedHashPool } from '../src/auth/rules/hash-pool.js';
import { productionArgon2 } from '../src/auth/rules/password.js';

const options = { algorithm: Algorithm.Argon2id, ...productionArgon2 };
const pool = sharedHashPool();
const password = process.env['BENCH_PASSWORD'] ?? 'bench-Passw0rd-42';
const stored = await pool.hash(password, options);

const app = Fastify({ logger: false });
await app.register(cookie);
type Credentials = { identity?: string; password?: string };

function openSession(reply: { setCookie: (name: string, value: string, options: object) => unknown }): void {
  reply.setCookie('session', randomBytes(32).toString('base64url'), { httpOnly: true, sameSite: 'lax', path: '/' });
}

app.post<{ Body: Credentials }>('/api/v1/customer/auth/login', async (request, reply) => {
  if (!(await pool.verify(stored, request.body.password ?? ''))) return reply.code(401).send({ error: 'invalid' });
  openSession(reply);
  return { identity: request.body.identity };
});
app.post<{ Body: Credentials & { email?: string } }>('/api/v1/customer/auth/register', async (request, reply) => {
  await pool.hash(request.body.password ?? '', options);
  openSession(reply);
  return reply.code(201).send({ identity: { value: request.body.email } });
});

await app.listen({ port: Number(process.env['PORT'] ?? 0), host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => pool.close()));
