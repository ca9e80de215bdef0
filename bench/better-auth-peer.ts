/**
 * Figure 9's peer, a child process: Better Auth on BETTER_AUTH_DATABASE_URL, hashing with the
 * service's argon2id parameters and its rate limiter off, so the two differ in their design only;
 * its cookie cache on with BETTER_AUTH_COOKIE_CACHE=on.
 */
import http from 'node:http';
import { Algorithm, hash, verify } from '@node-rs/argon2';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';
import pg from 'pg';
import { productionArgon2 } from '../src/auth/rules/password.js';

const databaseUrl = process.env['BETTER_AUTH_DATABASE_URL'];
if (databaseUrl === undefined) throw new Error('BETTER_AUTH_DATABASE_URL is not set');
const cookieCache = process.env['BETTER_AUTH_COOKIE_CACHE'] === 'on';
const argon2 = { algorithm: Algorithm.Argon2id, ...productionArgon2 };

// It listens at once (its URL is part of its options) and answers 503 until its tables exist;
// the benchmark waits for `GET /api/auth/ok`.
let handle: http.RequestListener = (_request, response) => void response.writeHead(503).end();
const server = http.createServer((request, response) => handle(request, response));
await new Promise<void>((resolve) => server.listen(Number(process.env['PORT'] ?? 0), '127.0.0.1', resolve));
const { port } = server.address() as { port: number };
const baseURL = `http://127.0.0.1:${port}`;

const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
const options = {
  database: pool,
  baseURL,
  secret: 'bench-better-auth-secret-0123456789abcdef0123456789',
  telemetry: { enabled: false },
  rateLimit: { enabled: false },
  emailAndPassword: {
    enabled: true,
    password: {
      hash: (password: string) => hash(password, argon2),
      verify: ({ hash: stored, password }: { hash: string; password: string }) => verify(stored, password),
    },
  },
  session: { cookieCache: { enabled: cookieCache } },
};
const { runMigrations } = await getMigrations(options);
await runMigrations();
const auth = betterAuth(options);
handle = toNodeHandler(auth);
process.once('SIGTERM', () => server.close(() => void pool.end()));
