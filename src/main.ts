import type http from 'node:http';
import { pino } from 'pino';
import { buildApp } from './app.js';
import { startAdminSocket } from './cli/admin-socket.js';
import { startMetricsServer } from './http/metrics-server.js';
import type { Config } from './config.js';
import { adminSocketPath } from './storage/data-folder.js';
import { openServices } from './services.js';

export function createLogger(config: Config) {
  return pino({ level: config.logLevel, base: { service: 'storefront-auth' } });
}

/** Runs the service until SIGTERM or SIGINT, then drains and closes everything it opened. */
export async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  const services = await openServices(config, logger);
  const app = await buildApp(services);
  let admin: http.Server | undefined;
  if (config.databaseUrl === undefined) {
    admin = await startAdminSocket(adminSocketPath(config.dataDir), services.keys.admin.toString('hex'), {
      db: services.db,
      clock: services.clock,
      storeChanged: () => services.store.invalidate(),
    });
  }

  const metrics =
    config.metrics === undefined
      ? undefined
      : await startMetricsServer(services.metrics, config.metrics.port, config.metrics.host);
  if (metrics !== undefined) logger.info({ metrics: metrics.address }, `metrics at ${metrics.address}`);

  let closing: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    closing ??= (async () => {
      logger.info({ signal }, 'shutting down: readiness now answers 503, finishing requests in flight');
      app.draining = true;
      admin?.close();
      metrics?.server.close();
      await app.close();
      await services.close();
      logger.info('stopped');
    })().catch((error: unknown) => {
      logger.error({ err: error }, 'shutdown failed');
      process.exitCode = 1;
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));

  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    admin?.close();
    metrics?.server.close();
    await services.close();
    throw error;
  }
  const store = await services.store.get();
  logger.info(
    {
      address,
      mode: config.databaseUrl === undefined ? 'embedded' : 'postgres',
      store: store.name,
      identity_mode: store.identityMode,
      status: store.status,
    },
    `Storefront Auth listening on ${address}`,
  );
}
