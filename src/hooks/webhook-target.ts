import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may go. A store's endpoint URL is chosen by whoever holds an admin token, and the
 * service would POST to it from inside the platform's network: without these rules an endpoint
 * could reach the database's port, a cloud metadata address or an internal admin page (SSRF).
 */
export interface TargetRules {
  /** Production: `https://` only. */
  httpsOnly: boolean;
  /** WEBHOOK_ALLOW_PRIVATE: loopback, private and link-local addresses allowed (tests, private networks). */
  allowPrivate: boolean;
}

/** Only addresses on the public internet: not loopback, private, link-local, unique local, CGNAT, multicast or reserved. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // An IPv4-mapped IPv6 address (::ffff:10.0.0.1) is judged as the IPv4 address it is.
  return ipaddr.process(address).range() === 'unicast';
}

/** The host of a URL as an address, when it is one (`[::1]` unbracketed); null for a name. */
function literalAddress(hostname: string): string | null {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : null;
}

/** What is wrong with an endpoint URL as written, before any name is looked up; null when nothing. */
export function webhookUrlProblem(input: string, rules: TargetRules): string | null {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return `${JSON.stringify(input)} is not a URL, such as https://shop.example/webhooks`;
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '')
    return `${JSON.stringify(input)} must have no credentials or fragment`;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && !rules.httpsOnly))
    return `${JSON.stringify(input)} must be https://${rules.httpsOnly ? '' : ' or http://'}`;
  const address = literalAddress(url.hostname);
  if (address !== null && !rules.allowPrivate && !isPublicAddress(address))
    return `${JSON.stringify(input)} points at a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE=true allows it)`;
  return null;
}

/** The first address of `addresses` that is not public, if any. */
function privateAmong(addresses: readonly dns.LookupAddress[]): string | undefined {
  return addresses.find((entry) => !isPublicAddress(entry.address))?.address;
}

/**
 * The URL's problem, its name looked up too: an endpoint whose name resolves to a private address
 * is refused when it is added. Delivery checks again, on the address it connects to.
 */
export async function webhookTargetProblem(input: string, rules: TargetRules): Promise<string | null> {
  const problem = webhookUrlProblem(input, rules);
  if (problem !== null || rules.allowPrivate) return problem;
  const { hostname } = new URL(input);
  if (literalAddress(hostname) !== null) return null;
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(hostname, { all: true });
  } catch {
    return `${JSON.stringify(hostname)} does not resolve`;
  }
  const found = privateAmong(addresses);
  return found === undefined
    ? null
    : `${JSON.stringify(hostname)} resolves to ${found}, a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE=true allows it)`;
}

/**
 * A name lookup that refuses private answers: the connection goes to the address checked here, so a
 * name that resolved to a public address when the endpoint was added and to an internal one now
 * (DNS rebinding) reaches nothing.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const found = privateAmong(addresses);
    if (found !== undefined) {
      return callback(new Error(`${hostname} resolves to ${found}, a private address: not delivered`), '', 0);
    }
    if (options.all === true)
      return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    const [first] = addresses;
    return callback(null, first!.address, first!.family);
  });
};

// Kept-alive connections: a busy endpoint takes one TLS handshake, not one per event.
const httpAgent = new http.Agent({ keepAlive: true });
const httpsAgent = new https.Agent({ keepAlive: true });

/** The answer's status, or why there was none. */
export type PostOutcome = { status: number } | { error: string };

/** Read from an answer at most, then the connection is dropped: receivers answer with a status. */
const maxAnswerBytes = 64 * 1024;

/**
 * POSTs a body and waits for the status, `timeoutMs` at most for the whole exchange. Redirects are
 * not followed (a 3xx is an answer that failed). The answer's body is read and thrown away.
 */
export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  rules: TargetRules,
  timeoutMs: number,
): Promise<PostOutcome> {
  const problem = webhookUrlProblem(url, rules);
  if (problem !== null) return Promise.resolve({ error: problem });
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: PostOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const request = client.request(
      target,
      {
        method: 'POST',
        agent: target.protocol === 'https:' ? httpsAgent : httpAgent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
        ...(rules.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      (response) => {
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > maxAnswerBytes) response.destroy();
        });
        response.on('end', () => finish({ status: response.statusCode ?? 0 }));
        response.on('close', () => finish({ status: response.statusCode ?? 0 }));
        response.on('error', () => finish({ status: response.statusCode ?? 0 }));
      },
    );
    const timer = setTimeout(() => {
      finish({ error: `no answer within ${timeoutMs / 1000} s` });
      request.destroy();
    }, timeoutMs);
    request.on('error', (error) => finish({ error: error.message }));
    request.end(body);
  });
}
