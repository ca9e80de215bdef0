import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request as a store's system received it: its headers, its body, and whether it verified. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  event: { type: string; timestamp: string; data: Record<string, unknown> };
}

/**
 * A store's own system: a real HTTP server that verifies every request with the Standard Webhooks
 * reference package (`standardwebhooks`) and answers as told: 204 by default, or a status, a
 * delay, or a dropped connection. It can be stopped and started again on the same port ("down").
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Requests whose signature the reference package refused, with its reason. */
  readonly refused: string[] = [];
  /** Secrets it accepts (any one verifies a request); set from the endpoint's answer. */
  secrets: string[] = [];
  /** How it answers; by default 204. */
  answer: (received: Received, response: http.ServerResponse) => void = (_received, response) =>
    response.writeHead(204).end();
  private server: http.Server | undefined;
  private port = 0;
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];

  async start(): Promise<string> {
    this.server = http.createServer((request, response) => this.handle(request, response));
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  /** Down: connections are refused until start() again (on the same port). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Resolves once `count` verified requests have arrived in all. */
  receivedCount(count: number): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  types(): string[] {
    return this.received.map((entry) => entry.event.type);
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = request.headers as Record<string, string>;
      const reasons: string[] = [];
      const verified = this.secrets.some((secret) => {
        try {
          new Webhook(secret).verify(body, headers);
          return true;
        } catch (error) {
          reasons.push(String(error));
          return false;
        }
      });
      if (!verified) {
        this.refused.push(reasons.join('; ') || 'no secret set');
        response.writeHead(401).end();
        return;
      }
      const received: Received = {
        id: headers['webhook-id']!,
        timestamp: headers['webhook-timestamp']!,
        signature: headers['webhook-signature']!,
        body,
        event: JSON.parse(body) as Received['event'],
      };
      this.received.push(received);
      for (const waiter of this.waiters.filter((w) => this.received.length >= w.count)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      this.answer(received, response);
    });
  }
}
