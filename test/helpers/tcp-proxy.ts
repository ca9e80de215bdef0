import net from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'hang';

/**
 * A TCP proxy in front of a real server (PostgreSQL, Redis) that a test can cut: `refuse` drops
 * every connection, `hang` accepts and never answers. The shared servers themselves never stop,
 * so other test files running at the same time are not disturbed.
 */
export class TcpProxy {
  private readonly server = net.createServer((socket) => this.accept(socket));
  private readonly sockets = new Set<net.Socket>();
  mode: ProxyMode = 'pass';
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** Switches mode; existing connections are dropped unless the new mode is `pass`. */
  set(mode: ProxyMode): void {
    this.mode = mode;
    if (mode !== 'pass') {
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
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
    if (this.mode === 'hang') return;
    const upstream = net.connect(this.targetPort, this.targetHost);
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  }
}
