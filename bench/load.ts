import http from 'node:http';
import autocannon from 'autocannon';

/**
 * Each request comes "from" an address of its own (X-Forwarded-For, trusted with TRUST_PROXY=true),
 * never reused, so the per-address limits never answer 429 for the benchmark's sake.
 */
let addressCounter = 0;
let addressBlock = 10;
export function nextClientAddress(): string {
  addressCounter += 1;
  const n = addressCounter % 0x1000000;
  return `${addressBlock}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
}

/**
 * The `visit`th address of a returning shopper, `customer`: always in the customer's own /24 (the
 * service then knows the device), never the same address twice in a row of 254, and in a /8 of
 * its own, apart from the never-reused addresses and the probes'.
 */
export function returningAddress(customer: number, visit: number): string {
  return `12.${(customer >>> 8) & 0xff}.${customer & 0xff}.${1 + (visit % 254)}`;
}

/** A helper process counts its own addresses in another /8, so they never meet the benchmark's. */
export function useClientAddressBlock(firstOctet: number): void {
  addressBlock = firstOctet;
}

let identityCounter = 0;
/** A distinct email address for the whole run (none exists unless the benchmark registered it). */
export function nextEmail(prefix: string): string {
  identityCounter += 1;
  return `${prefix}-${process.pid}-${identityCounter}@bench.example`;
}

export interface LoadOptions {
  url: string;
  method: 'GET' | 'POST';
  path: string;
  connections: number;
  seconds: number;
  /** The JSON body of each request; called once per request. */
  body?: () => unknown;
  /** Sent with every request (a session cookie, say); a function is called once per request. */
  headers?: Record<string, string> | (() => Record<string, string>);
  /** Each request's X-Forwarded-For, called before `body`; a never-reused address unless given. */
  clientAddress?: () => string;
  /** Requests per second over all connections; unset means as fast as answers come. */
  overallRate?: number;
  onResponse?: (status: number, body: string) => void;
}

export interface LoadResult {
  responses: number;
  seconds: number;
  /** 2xx answers per second. */
  okPerSecond: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  statusCounts: Record<string, number>;
  /** Milliseconds, from every answer (not only 2xx), exact rather than bucketed. */
  latency: { p50: number; p99: number; max: number };
}

function percentile(sorted: Float64Array, share: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!;
}

/** p50, p99 and max of every answer's latency, exact rather than bucketed. */
function latencySummary(latencies: number[]): LoadResult['latency'] {
  const sorted = Float64Array.from(latencies).sort();
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/** One autocannon run from this process over loopback; resolves with its counts and latencies. */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  const makeBody = options.body;
  const request: autocannon.Request = {
    method: options.method,
    path: options.path,
    setupRequest(request) {
      const headers = typeof options.headers === 'function' ? options.headers() : options.headers;
      const address = options.clientAddress?.() ?? nextClientAddress();
      request.headers = { ...request.headers, ...headers, 'x-forwarded-for': address };
      if (makeBody !== undefined) {
        request.headers['content-type'] = 'application/json';
        request.body = JSON.stringify(makeBody());
      }
      return request;
    },
  };
  if (options.onResponse !== undefined) request.onResponse = (status, body) => options.onResponse!(status, body);
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.seconds,
        requests: [request],
        timeout: 10,
        ...(options.overallRate === undefined ? {} : { overallRate: options.overallRate }),
      },
      (error, result) => {
        if (error !== null && error !== undefined) {
          reject(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCounts[code] = stat.count ?? 0;
        resolve({
          responses: latencies.length,
          seconds: result.duration,
          okPerSecond: result['2xx'] / result.duration,
          non2xx: result.non2xx,
          errors: result.errors,
          statusCounts,
          latency: latencySummary(latencies),
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  });
}

export interface OpenLoadOptions {
  url: string;
  /** POST with `body`, or GET without one (a probe). */
  method?: 'GET' | 'POST';
  path: string;
  connections: number;
  seconds: number;
  /** Mean arrivals per second; the gaps between them are exponential (a Poisson process). */
  rate: number;
  body?: () => unknown;
}

/**
 * Open-loop load: random arrivals at a mean rate, as independent shoppers send them (autocannon's
 * fixed rate fires all connections on one timer, in bursts). Latency runs from each arrival,
 * including any wait for a free connection.
 */
export async function runOpenLoad(options: OpenLoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const target = new URL(options.path, options.url);
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const method = options.method ?? 'POST';
  const send = () => {
    const arrived = performance.now();
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body());
    const done = new Promise<void>((resolve) => {
      const request = http.request(
        target,
        {
          method,
          agent,
          headers: {
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
            'x-forwarded-for': nextClientAddress(),
          },
          timeout: 10_000,
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            latencies.push(performance.now() - arrived);
            const code = String(response.statusCode);
            statusCounts[code] = (statusCounts[code] ?? 0) + 1;
            resolve();
          });
          // An answer cut off midway (a timeout, a closed socket) ends without 'end'.
          response.on('close', () => {
            if (!response.complete) {
              errors += 1;
              resolve();
            }
          });
        },
      );
      request.on('error', () => {
        errors += 1;
        resolve();
      });
      request.on('timeout', () => request.destroy(new Error('timeout')));
      request.end(payload);
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };

  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  let next = started;
  while (next < deadline) {
    const now = performance.now();
    if (now < next) await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.floor(next - now))));
    // Send every arrival that is due (timers are coarse), then draw the next gap.
    while (next <= performance.now() && next < deadline) {
      send();
      next += (-Math.log(1 - Math.random()) / options.rate) * 1000;
    }
  }
  await Promise.all([...inFlight]);
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  const ok = Object.entries(statusCounts)
    .filter(([code]) => code.startsWith('2'))
    .reduce((total, [, count]) => total + count, 0);
  return {
    responses: latencies.length,
    seconds,
    okPerSecond: ok / seconds,
    non2xx: latencies.length - ok,
    errors,
    statusCounts,
    latency: latencySummary(latencies),
  };
}

/** The answers that were not 2xx, by status, and the connection errors: `all 2xx` when none. */
export function statusText(result: LoadResult): string {
  const odd = Object.entries(result.statusCounts).filter(([code]) => !code.startsWith('2'));
  const parts = odd.map(([code, count]) => `${code}×${count}`);
  if (result.errors > 0) parts.push(`errors×${result.errors}`);
  return parts.length === 0 ? 'all 2xx' : `NON-2xx: ${parts.join(', ')}`;
}

export function sum(results: LoadResult[], pick: (result: LoadResult) => number): number {
  return results.reduce((total, result) => total + pick(result), 0);
}
