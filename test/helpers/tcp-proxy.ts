import net from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'hang' | 'freeze';

/**
 * A TCP proxy in front of a real server (PostgreSQL, Redis, PgBouncer; over TCP or a Unix socket)
 * that a test can cut: `refuse` drops
 * every connection, `hang` accepts and never answers, `freeze` keeps the open connections open
 * but forwards nothing more either way (a partition, or a server stuck mid-answer) and lets new
 * ones hang. The shared servers themselves never stop, so other test files running at the same
 * time are not disturbed.
 */
export class TcpProxy {
  private readonly server = net.createServer((socket) => this.accept(socket));
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  mode: ProxyMode = 'pass';
  port = 0;
  private readonly target: net.NetConnectOpts;

  /** A host and port, or any target `net.connect` takes (such as a Unix socket's `path`). */
  constructor(target: net.NetConnectOpts);
  constructor(targetHost: string, targetPort: number);
  constructor(target: net.NetConnectOpts | string, targetPort?: number) {
    this.target = typeof target === 'string' ? { host: target, port: targetPort! } : target;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /**
   * Switches mode. `freeze` stops forwarding on the open connections; any other change drops
   * them (after a freeze, what they carry is stale).
   */
  set(mode: ProxyMode): void {
    const previous = this.mode;
    this.mode = mode;
    if (mode === 'freeze') {
      for (const [client, upstream] of this.pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    } else if (mode !== 'pass' || previous === 'freeze') {
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
      this.pairs.clear();
    }
  }

  /**
   * Ends a freeze as a healed partition does: the open connections carry on, and whatever was
   * sent during the freeze arrives late, answers included. New connections pass again.
   */
  thaw(): void {
    this.mode = 'pass';
    for (const [client, upstream] of this.pairs) {
      client.pipe(upstream);
      upstream.pipe(client);
    }
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => {});
    if (this.mode === 'refuse') {
      client.destroy();
      return;
    }
    if (this.mode === 'hang' || this.mode === 'freeze') return;
    const upstream = net.connect(this.target);
    this.sockets.add(upstream);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    this.pairs.add(pair);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      this.pairs.delete(pair);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  }
}

/**
 * A TCP load balancer for tests: each new connection goes to the next target in turn. A client
 * that opens one connection per request spreads its requests evenly, and learns which target
 * served a request from its own port (`targetOf`).
 */
export class RoundRobinProxy {
  private readonly server = net.createServer((socket) => this.accept(socket));
  private readonly sockets = new Set<net.Socket>();
  private readonly targetByClientPort = new Map<number, number>();
  private turn = 0;
  /** Connections handed to each target so far. */
  readonly connections: number[];
  port = 0;

  constructor(private readonly targets: ReadonlyArray<{ host: string; port: number }>) {
    this.connections = targets.map(() => 0);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** The index of the target the connection from this client port was handed to. */
  targetOf(clientPort: number): number | undefined {
    return this.targetByClientPort.get(clientPort);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const index = this.turn;
    this.turn = (this.turn + 1) % this.targets.length;
    this.connections[index]! += 1;
    this.targetByClientPort.set(client.remotePort!, index);
    const target = this.targets[index]!;
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    }
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  }
}
