import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from '../../metrics.js';

/** GET /metrics in Prometheus text format, on its own listener so it is never public by accident. */
export async function startMetricsServer(
  metrics: Metrics,
  port: number,
  host: string,
): Promise<{ server: http.Server; address: string }> {
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  return { server, address: `http://${host}:${bound.port}/metrics` };
}
