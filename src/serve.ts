import fs from 'node:fs';
import { deploymentStores } from './store/store.js';
import type http from 'node:http';
import net from 'node:net';
import { promisify } from 'node:util';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { buildAdminApp } from './http/admin/app.js';
import { startMetricsServer } from './http/operations/metrics-server.js';
import { nearMissWarning, type Config } from './config.js';
import { IdleCollector, processHeap } from './idle-collection.js';
import { createLogger, openServices, type Services } from './services.js';
import { DataFolderBusyError } from './storage/embedded-postgres.js';

/** A start-up failure the operator fixes: its message is one line that says how. */
export class StartupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** The listening address's variables in one line, so the message says what to change. */
function listenError(
  error: unknown,
  names: { port: string; host: string },
  port: number,
  host: string,
): StartupError | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `${names.port}=${port} ${names.host}=${host}`;
  const reasons: Record<string, string> = {
    EADDRINUSE: `the port is in use; stop what listens there, or set ${names.port} to a free port`,
    EACCES: `this user may not listen on that port; set ${names.port} to a port above 1023`,
    EADDRNOTAVAIL: `this machine has no such address; set ${names.host} to one of its addresses (or 0.0.0.0)`,
    ENOTFOUND: `the host name does not resolve; set ${names.host} to an address of this machine`,
  };
  const reason = code === undefined ? undefined : reasons[code];
  return reason === undefined ? undefined : new StartupError(`${where}: ${reason}`, { cause: error });
}

/**
 * Binds the address and lets it go, so a port in use is found in milliseconds, before the
 * database is opened (a first embedded start creates a whole server folder). The real listen
 * still reports a port taken in between the same way.
 */
async function assertCanListen(names: { port: string; host: string }, port: number, host: string): Promise<void> {
  if (port === 0) return; // any free port: nothing to check
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ port, host, exclusive: true }, resolve);
    });
  } catch (error) {
    throw listenError(error, names, port, host) ?? error;
  }
  await new Promise((resolve) => probe.close(resolve));
}

/** The owner of a busy data folder is a service, or a command line that holds it until it ends. */
function folderBusy(error: DataFolderBusyError): StartupError {
  let serving: boolean;
  try {
    serving = fs.readFileSync(`/proc/${error.pid}/cmdline`, 'utf8').split('\0').includes('serve');
  } catch {
    serving = true; // cannot look: a service is the likelier owner
  }
  const where = `DATA_DIR=${error.dataDir} (process ${error.pid})`;
  return new StartupError(
    serving
      ? `another storefront-auth is already serving ${where}: stop it, or give this one another DATA_DIR`
      : `a storefront-auth command is using ${where}: start again when it has ended, or give this one another DATA_DIR`,
    { cause: error },
  );
}

const servicePort = { port: 'PORT', host: 'HOST' };
const metricsPort = { port: 'METRICS_PORT', host: 'METRICS_HOST' };
const adminPort = { port: 'ADMIN_PORT', host: 'ADMIN_HOST' };

type MetricsServer = Awaited<ReturnType<typeof startMetricsServer>>;

/** What a running service is made of, as its shutdown needs it. */
interface Running {
  config: Config;
  logger: FastifyBaseLogger;
  services: Services;
  app: FastifyInstance;
  /** The admin listener's app, when ADMIN_TOKENS or INTROSPECTION_TOKENS asks for one. */
  admin: FastifyInstance | undefined;
  metrics: MetricsServer | undefined;
  idleCollector: IdleCollector;
}

type ShutdownStage = 'delay' | 'requests' | 'background and pools';

function closeServer(server: http.Server | undefined): Promise<void> {
  if (server === undefined) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Runs the service until SIGTERM or SIGINT, then drains and closes everything it opened. */
export async function serve(config: Config): Promise<void> {
  const logger = createLogger({ level: config.logLevel });
  for (const { variable, resembles } of config.nearMisses) {
    logger.warn({ variable, resembles }, nearMissWarning({ variable, resembles }));
  }
  await assertCanListen(servicePort, config.port, config.host);
  if (config.metrics !== undefined) await assertCanListen(metricsPort, config.metrics.port, config.metrics.host);
  if (config.admin !== undefined) await assertCanListen(adminPort, config.admin.port, config.admin.host);
  let services: Services;
  try {
    services = await openServices(config, logger);
  } catch (error) {
    if (error instanceof DataFolderBusyError) throw folderBusy(error);
    throw error;
  }
  const app = await buildApp(services).catch(async (error: unknown) => {
    await services.close();
    throw error;
  });
  const admin =
    config.admin === undefined
      ? undefined
      : await buildAdminApp(services).catch(async (error: unknown) => {
          await services.close();
          throw error;
        });
  const metrics = await startMetrics(services, config.metrics, logger);
  const idleCollector = new IdleCollector(processHeap(), logger);
  const shutdown = shutdownOnce({ config, logger, services, app, admin, metrics, idleCollector });
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    metrics?.server.close();
    await services.close();
    throw listenError(error, servicePort, config.port, config.host) ?? error;
  }
  const adminAddress = await listenAdmin(admin, config.admin, async () => {
    await app.close();
    metrics?.server.close();
    await services.close();
  });
  idleCollector.start();
  // One store is named in the line; a deployment of several says how many it serves.
  const deployment = await deploymentStores(services.db);
  const only = deployment.live === 1 ? await services.store.byId(deployment.anyId!) : null;
  const stores =
    only === null
      ? { stores: deployment.live }
      : { store: only.name, identity_mode: only.identityMode, status: only.status };
  // One line names both addresses, so the admin one is found beside the customer one (ADMIN_PORT=0 too).
  logger.info(
    {
      address,
      ...(adminAddress === undefined ? {} : { admin: adminAddress }),
      mode: config.database.mode === 'embedded' ? 'embedded' : 'postgres',
      ...stores,
    },
    `Storefront Auth listening on ${address}${adminAddress === undefined ? '' : `, admin API on ${adminAddress}`}`,
  );
}

/** The admin listener, once the customer one listens; a failure to listen closes everything opened before. */
async function listenAdmin(
  admin: FastifyInstance | undefined,
  address: Config['admin'],
  closeOpened: () => Promise<void>,
): Promise<string | undefined> {
  if (admin === undefined || address === undefined) return undefined;
  try {
    return await admin.listen({ port: address.port, host: address.host });
  } catch (error) {
    await closeOpened();
    throw listenError(error, adminPort, address.port, address.host) ?? error;
  }
}

/** The metrics listener when METRICS_PORT asks for one; a failure to listen closes the services. */
async function startMetrics(
  services: Services,
  address: Config['metrics'],
  logger: FastifyBaseLogger,
): Promise<MetricsServer | undefined> {
  if (address === undefined) return undefined;
  let metrics: MetricsServer;
  try {
    metrics = await startMetricsServer(services.metrics, address.port, address.host);
  } catch (error) {
    await services.close();
    throw listenError(error, metricsPort, address.port, address.host) ?? error;
  }
  logger.info({ metrics: metrics.address }, `metrics at ${metrics.address}`);
  return metrics;
}

/** The signal handler: the first signal starts the drain, a second one cuts its delay short. */
function shutdownOnce(running: Running): (signal: NodeJS.Signals) => void {
  let closing: Promise<void> | undefined;
  let endDelay: (() => void) | undefined;
  return (signal) => {
    if (closing !== undefined) {
      endDelay?.(); // a second signal: stop waiting for the balancer
      return;
    }
    closing = drain(running, signal, (end) => (endDelay = end)).catch((error: unknown) => {
      running.logger.error({ err: error }, 'shutdown failed');
      process.exitCode = 1;
    });
  };
}

/**
 * The drain: readiness answers 503 at once while the service keeps serving for the delay, so a
 * load balancer stops sending before the listener closes (closing it earlier resets connections
 * the kernel accepted but the service had not read). Then: stop accepting, answer every request
 * already received, finish background work, close the pools last. All of it within the timeout.
 */
async function drain(running: Running, signal: NodeJS.Signals, delaying: (end: () => void) => void): Promise<void> {
  const { config, logger, services, app, admin, metrics, idleCollector } = running;
  const startedMs = performance.now();
  const progress: { stage: ShutdownStage } = { stage: 'delay' };
  const cut = cutWhenTimedOut(running, progress, startedMs);

  app.draining = true;
  idleCollector.stop();
  // SIGINT is a person at a terminal, not an orchestrator with a load balancer in front.
  const delaySeconds = signal === 'SIGTERM' ? config.shutdown.delaySeconds : 0;
  logger.info(
    { signal, delay_seconds: delaySeconds },
    'shutting down: readiness now answers 503; serving on for the drain delay',
  );
  if (delaySeconds > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delaySeconds * 1000);
      delaying(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  progress.stage = 'requests';
  logger.info(
    { open_connections: await openConnections(app) },
    'no longer accepting connections; answering the requests already received',
  );
  // Closes the listener and idle keep-alive connections, then waits for every request in
  // flight, those queued for a hashing thread included; their answers say Connection: close.
  // The admin listener closes alongside: backends keep introspecting through the drain delay, as
  // the shoppers' requests they serve are still being answered.
  await Promise.all([app.close(), admin?.close()]);
  await closeServer(metrics?.server);

  progress.stage = 'background and pools';
  // Background work and the dispatcher's batch first, the database and Redis last.
  try {
    await services.close();
  } finally {
    clearTimeout(cut);
  }
  logger.info({ ms: Math.round(performance.now() - startedMs) }, 'stopped');
}

/** Past SHUTDOWN_TIMEOUT_SECONDS: says where the drain stood, and ends the process. */
function cutWhenTimedOut(
  { config, logger, services, app }: Running,
  progress: { stage: ShutdownStage },
  startedMs: number,
): NodeJS.Timeout {
  return setTimeout(async () => {
    logger.error(
      {
        stage: progress.stage,
        open_connections: await openConnections(app),
        background_pending: services.background.size,
        waited_ms: Math.round(performance.now() - startedMs),
      },
      'shutdown timed out: cutting what is left (SHUTDOWN_TIMEOUT_SECONDS)',
    );
    process.exit(1);
  }, config.shutdown.timeoutSeconds * 1000);
}

function openConnections(app: FastifyInstance): Promise<number> {
  return promisify(app.server.getConnections.bind(app.server))().catch(() => -1);
}
