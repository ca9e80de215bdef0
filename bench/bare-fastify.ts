/**
 * The yardstick for figure 1: Fastify with no plugins, hooks or schemas, answering the service's
 * JSON on the service's paths. Run as a child process: `node --import tsx bench/bare-fastify.ts`.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/api/v1/health/live', async () => ({ status: 'ok' }));
app.get('/api/v1/platform', async () => ({ name: 'Storefront', api_version: 'v1' }));

await app.listen({ port: Number(process.env['PORT'] ?? 0), host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close());
