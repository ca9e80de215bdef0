/**
 * Where Redis is, read from REDIS_URL. A single server is a plain `redis://` or `rediss://` URL,
 * which ioredis reads itself. A Redis Cluster is named by its seed nodes:
 *
 *   redis+cluster://[user:password@]host:port,host:port[/]      (rediss+cluster:// for TLS)
 *
 * The client asks any reachable seed for the whole topology, so a few seeds are enough. WHATWG
 * URLs cannot hold a list of hosts, hence the hand-written parser.
 */
export interface RedisClusterAddress {
  nodes: Array<{ host: string; port: number }>;
  username: string | undefined;
  password: string | undefined;
  tls: boolean;
}

/** Why a REDIS_URL value cannot be used; the message completes "REDIS_URL: …". */
export class RedisAddressError extends Error {}

const clusterSchemes = ['redis+cluster:', 'rediss+cluster:'] as const;

export function isRedisClusterUrl(url: string): boolean {
  return clusterSchemes.some((scheme) => url.toLowerCase().startsWith(`${scheme}//`));
}

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RedisAddressError(`the ${what} in the cluster URL is not valid percent-encoding`);
  }
}

function parseNode(entry: string): { host: string; port: number } {
  // host:port, or [IPv6]:port.
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
  const port = Number(match?.[2]);
  if (match === null || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RedisAddressError(
      `"${entry}" is not a host:port in the cluster URL (expected redis+cluster://host:port,host:port/)`,
    );
  }
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

/** The seeds, credentials and TLS choice of a `redis+cluster://` or `rediss+cluster://` URL. */
export function parseRedisClusterUrl(url: string): RedisClusterAddress {
  const match = /^(rediss?)\+cluster:\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?([?#].*)?$/i.exec(url);
  if (match === null) throw new RedisAddressError('expected redis+cluster://[user:password@]host:port,host:port/');
  const [, scheme, userinfo, hostList, path, rest] = match;
  if (rest !== undefined) {
    throw new RedisAddressError('a cluster URL takes no query or fragment (?…, #…)');
  }
  // Every node of a cluster has only database 0; a number here would be silently ignored.
  if (path !== undefined && path !== '/' && path !== '/0') {
    throw new RedisAddressError(
      `a Redis Cluster has only database 0, so the cluster URL may not name "${path.slice(1)}"; use REDIS_KEY_PREFIX to keep deployments apart`,
    );
  }
  if (hostList === undefined || hostList === '') {
    throw new RedisAddressError('the cluster URL names no host:port');
  }
  const nodes = hostList.split(',').map((entry) => parseNode(entry.trim()));
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    const user = colon === -1 ? userinfo : userinfo.slice(0, colon);
    username = user === '' ? undefined : decode(user, 'user name');
    password = colon === -1 ? undefined : decode(userinfo.slice(colon + 1), 'password');
  }
  return { nodes, username, password, tls: scheme!.toLowerCase() === 'rediss' };
}
