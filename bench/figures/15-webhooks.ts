import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { format, progress, row, sleep, withService, type BenchContext, type Row } from '../context.js';
import type { Server } from '../servers.js';

/**
 * Figure 15: webhooks. A local receiver (answering 204 at once) hears a store's events raised at 200
 * a second: the p99 from each event's commit (its `timestamp`) to the receiver. Then the receiver
 * is down for as long while events keep coming, and up again: every event must arrive, none twice
 * in a row. The events are `webhook.test`s raised through the admin API (the one change that needs
 * no password hash), spread over as many tokens as the rate needs (1,000 calls a minute each).
 */

const eventsPerSecond = 200;
const lagGoalSeconds = 1;
const tokens = Array.from(
  { length: 16 },
  (_, n) => `bench-webhook-token-${String(n).padStart(2, '0')}-AAAAAAAAAAAAAAAA`,
);

interface Arrival {
  id: string;
  lagMs: number;
}

class Receiver {
  readonly arrivals: Arrival[] = [];
  private server: http.Server | undefined;
  private port = 0;

  async start(): Promise<string> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string };
        this.arrivals.push({
          id: String(request.headers['webhook-id']),
          lagMs: Date.now() - Date.parse(event.timestamp),
        });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  }

  distinct(): number {
    return new Set(this.arrivals.map((arrival) => arrival.id)).size;
  }
}

/** Raises events at `eventsPerSecond` for `seconds`, paced by the clock (an open loop); counts the refused. */
async function raiseEvents(service: Server, webhookId: string, seconds: number) {
  const total = Math.round(eventsPerSecond * seconds);
  const started = performance.now();
  let refused = 0;
  const calls: Promise<void>[] = [];
  for (let n = 0; n < total; n += 1) {
    const wait = started + (n * 1000) / eventsPerSecond - performance.now();
    if (wait > 1) await sleep(wait);
    calls.push(
      fetch(`${service.adminUrl}/admin/v1/stores/default/webhooks/${webhookId}/test`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[n % tokens.length]}` },
      }).then(
        async (answer) => {
          if (answer.status !== 202) refused += 1;
          await answer.arrayBuffer();
        },
        () => void (refused += 1),
      ),
    );
  }
  await Promise.all(calls);
  return { sent: total - refused, refused };
}

/** Waits until `count` events have arrived, or `timeoutSeconds` passed; the seconds it took. */
async function arrived(receiver: Receiver, count: number, timeoutSeconds: number): Promise<number> {
  const started = performance.now();
  while (receiver.distinct() < count && performance.now() - started <= timeoutSeconds * 1000) await sleep(100);
  return (performance.now() - started) / 1000;
}

export async function figureWebhooks(context: BenchContext): Promise<Row[]> {
  const receiver = new Receiver();
  const url = await receiver.start();
  try {
    return await withService(
      context,
      '15',
      async (service) => {
        const added = await fetch(`${service.adminUrl}/admin/v1/stores/default/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tokens[0]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url, events: ['*'], description: 'benchmark receiver' }),
        });
        if (added.status !== 201)
          throw new Error(`adding the endpoint answered ${added.status}: ${await added.text()}`);
        const { id } = (await added.json()) as { id: string };
        const spanSeconds = context.seconds * context.rounds;

        // Steady: the receiver up, every event's lag read.
        const steady = await raiseEvents(service, id, spanSeconds);
        const steadyDrain = await arrived(receiver, steady.sent, 30);
        const lags = receiver.arrivals.map((arrival) => arrival.lagMs / 1000).sort((a, b) => a - b);
        // The nearest rank above, as this figure has always read it.
        const at = (share: number) => lags[Math.min(lags.length - 1, Math.floor(share * lags.length))] ?? NaN;
        const [p50, p99] = [at(0.5), at(0.99)];
        progress(
          context,
          `fig 15 steady: ${steady.sent} events, lag p50 ${format(p50 * 1000)} ms, p99 ${format(p99 * 1000)} ms`,
        );

        // Down for as long as that lasted, with events coming; then up, with events coming still.
        const before = receiver.distinct();
        await receiver.stop();
        const whileDown = await raiseEvents(service, id, spanSeconds);
        await receiver.start();
        const afterUp = await raiseEvents(service, id, spanSeconds);
        const expected = before + whileDown.sent + afterUp.sent;
        const drainSeconds = await arrived(receiver, expected, 120);
        const missing = expected - receiver.distinct();
        const repeats = receiver.arrivals.filter(
          (arrival, i) => i > 0 && arrival.id === receiver.arrivals[i - 1]!.id,
        ).length;
        progress(
          context,
          `fig 15 down ${spanSeconds} s then up: ${expected - before} events, ${missing} missing, ${repeats} repeated in a row, all in ${format(drainSeconds, 1)} s after the last`,
        );
        const refused = steady.refused + whileDown.refused + afterUp.refused;
        return [
          row(
            '15a',
            `webhook lag at ${eventsPerSecond} events/s, seconds from the event's commit to a local receiver getting it (p99)`,
            's',
            p99,
            { text: `p99 ≤ ${lagGoalSeconds} s`, met: p99 <= lagGoalSeconds && refused === 0 && steadyDrain < 30 },
            `${steady.sent} events over ${spanSeconds} s; p50 ${format(p50 * 1000)} ms, p99 ${format(p99 * 1000)} ms, max ${format(lags.at(-1)! * 1000)} ms`,
            { non2xx: refused },
          ),
          row(
            '15b',
            `events missing after the receiver was down ${spanSeconds} s under ${eventsPerSecond} events/s, then up`,
            'events',
            missing,
            { text: 'none missing, none twice in a row', met: missing === 0 && repeats === 0 && refused === 0 },
            `${expected - before} events (${whileDown.sent} while down); the last arrived ${format(drainSeconds, 1)} s after the load ended; ${repeats} repeated in a row`,
            { non2xx: refused },
          ),
        ];
      },
      { ADMIN_TOKENS: tokens.join(','), WEBHOOK_ALLOW_PRIVATE: 'true' },
    );
  } finally {
    await receiver.stop();
  }
}
