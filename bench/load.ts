import autocannon from 'autocannon';

/**
 * Every request the benchmark sends comes "from" its own client address (X-Forwarded-For, which
 * the service trusts with TRUST_PROXY=true), so the per-address limits (300 calls a minute, 20
 * logins a minute, 20 registrations an hour) never answer 429 for the benchmark's sake. Addresses
 * count up through 10.0.0.0/8 for the whole run and are never reused.
 */
let addressCounter = 0;
export function nextClientAddress(): string {
  addressCounter += 1;
  const n = addressCounter % 0x1000000;
  return `10.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
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

/** One autocannon run from this process over loopback; resolves with its counts and latencies. */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  const makeBody = options.body;
  const request: autocannon.Request = {
    method: options.method,
    path: options.path,
    setupRequest(request) {
      request.headers = { ...request.headers, 'x-forwarded-for': nextClientAddress() };
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
        const sorted = Float64Array.from(latencies).sort();
        const ok = result['2xx'];
        resolve({
          responses: sorted.length,
          seconds: result.duration,
          okPerSecond: ok / result.duration,
          non2xx: result.non2xx,
          errors: result.errors,
          statusCounts,
          latency: {
            p50: percentile(sorted, 0.5),
            p99: percentile(sorted, 0.99),
            max: sorted[sorted.length - 1] ?? Number.NaN,
          },
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  });
}
