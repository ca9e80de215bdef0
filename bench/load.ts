import http from 'node:http';
import autocannon from 'autocannon';

// Each request comes "from" an address of its own (X-Forwarded-For, trusted with TRUST_PROXY=true),
// never reused, so the per-address limits never answer 429 for the benchmark's sake.
let addressCounter = 0;
let addressBlock = 10;
export function nextClientAddress(): string {
  addressCounter += 1;
  const n = addressCounter % 0x1000000;
  return `${addressBlock}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
}

/** A returning shopper's `visit`th address: always in the customer's own /24 (a known device), in 12/8. */
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

export function percentile(sorted: ArrayLike<number>, share: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!;
}

export function latencySummary(latencies: number[]): LoadResult['latency'] {
  const sorted = Float64Array.from(latencies).sort();
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] ?? Number.NaN };
}

/** A result from answers counted by hand: `ok` 2xx answers (or whole operations) over `seconds`. */
export function summarize(
  latencies: number[],
  statusCounts: Record<string, number>,
  { seconds, errors, ok, non2xx }: { seconds: number; errors: number; ok?: number; non2xx?: number },
): LoadResult {
  const twoHundreds = Object.entries(statusCounts)
    .filter(([code]) => code.startsWith('2'))
    .reduce((total, [, count]) => total + count, 0);
  return {
    responses: latencies.length,
    seconds,
    okPerSecond: (ok ?? twoHundreds) / seconds,
    non2xx: non2xx ?? latencies.length - twoHundreds,
    errors,
    statusCounts,
    latency: latencySummary(latencies),
  };
}

/** A rate measured without HTTP (raw argon2id), as a result its figure's rounds can hold. */
export function rateResult(perSecond: number): LoadResult {
  return summarize([], {}, { seconds: 1, errors: 0, ok: perSecond, non2xx: 0 });
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

export interface Call {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}
/** Status 0: a connection error, a timeout or an answer cut off midway. */
export interface Answer {
  status: number;
  body: string;
  /** The `name=value` of each Set-Cookie. */
  cookies: string[];
}

/** One request over `agent` (so it may set Host), from a never-reused address unless the headers name one. */
export function request(agent: http.Agent, base: string, call: Call): Promise<Answer> {
  const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
  return new Promise((resolve) => {
    const failed = () => resolve({ status: 0, body: '', cookies: [] });
    const sent = http.request(
      new URL(call.path, base),
      {
        method: call.method,
        agent,
        timeout: 10_000,
        headers: {
          'x-forwarded-for': nextClientAddress(),
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          ...call.headers,
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            cookies: (response.headers['set-cookie'] ?? []).map((line) => line.split(';')[0]!),
          }),
        );
        response.on('close', () => void (response.complete || failed()));
      },
    );
    sent.on('error', failed);
    sent.on('timeout', () => sent.destroy(new Error('timeout')));
    sent.end(payload);
  });
}

export interface OpenLoadOptions {
  url: string;
  path: string;
  connections: number;
  seconds: number;
  /** Mean arrivals per second; the gaps between them are exponential (a Poisson process). */
  rate: number;
  /** POST with a body, or GET without one (a probe). */
  body?: () => unknown;
  headers?: () => Record<string, string>;
}

/**
 * Open-loop load: random arrivals at a mean rate, as independent shoppers send them (autocannon's
 * fixed rate fires all connections on one timer, in bursts). Latency runs from each arrival.
 */
export async function runOpenLoad(options: OpenLoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const send = () => {
    const arrived = performance.now();
    const body = options.body?.();
    const call: Call = { method: body === undefined ? 'GET' : 'POST', path: options.path, body };
    if (options.headers !== undefined) call.headers = options.headers();
    const done = request(agent, options.url, call).then(({ status }) => {
      if (status === 0) errors += 1;
      else {
        latencies.push(performance.now() - arrived);
        statusCounts[status] = (statusCounts[status] ?? 0) + 1;
      }
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
  agent.destroy();
  return summarize(latencies, statusCounts, { seconds: (performance.now() - started) / 1000, errors });
}

/** The answers that were not 2xx, by status, and the connection errors: `all 2xx` when none. */
export function statusText(result: LoadResult): string {
  const odd = Object.entries(result.statusCounts).filter(([code]) => !code.startsWith('2'));
  const parts = odd.map(([code, count]) => `${code}×${count}`);
  if (result.errors > 0) parts.push(`errors×${result.errors}`);
  return parts.length === 0 ? 'all 2xx' : `NON-2xx: ${parts.join(', ')}`;
}

export function sum<T>(items: T[], pick: (item: T) => number): number {
  return items.reduce((total, item) => total + pick(item), 0);
}

/** The non-2xx answers and errors of `results`; `clean` when there were none. */
export function failures(results: LoadResult[]) {
  const [non2xx, errors] = [sum(results, (result) => result.non2xx), sum(results, (result) => result.errors)];
  return { non2xx, errors, clean: non2xx + errors === 0 };
}

/** The status texts of the results that had non-2xx answers or errors, for a row's notes. */
export function troubles(results: LoadResult[]): string[] {
  return results.filter((result) => result.non2xx + result.errors > 0).map(statusText);
}
