import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { format, progress, withService, type BenchContext, type Row } from './context.js';
import { freePort, type Server } from './servers.js';

/**
 * Figure 15: webhooks. A receiver on this machine (answering 204 at once) hears a store's events
 * while they are raised at 200 a second: the p99 from each event's commit (its `timestamp`) to the
 * receiver getting it. Then the receiver is down for as long as that load lasted while events keep
 * coming, and up again: every event must arrive, none missing and none twice in a row.
 *
 * The events are `webhook.test`s raised through the admin API (`POST …/webhooks/{id}/test`): the
 * one change that needs no password hash, so 200 a second is in reach of two cores. Each is written
 * in its request's transaction and delivered as any customer event. The admin API allows each
 * token 1,000 calls a minute, so the load spreads over as many tokens as the rate needs.
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
}

/** Raises events at `eventsPerSecond` for `seconds`, paced by the clock (an open loop); counts the refused. */
async function raiseEvents(
  service: Server,
  webhookId: string,
  seconds: number,
): Promise<{ sent: number; refused: number }> {
  const total = Math.round(eventsPerSecond * seconds);
  const started = performance.now();
  let refused = 0;
  const calls: Promise<void>[] = [];
  for (let n = 0; n < total; n += 1) {
    const due = started + (n * 1000) / eventsPerSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
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
  while (new Set(receiver.arrivals.map((a) => a.id)).size < count) {
    if (performance.now() - started > timeoutSeconds * 1000) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (performance.now() - started) / 1000;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** Deliveries of one event right after another of itself: a retry of something already received. */
function repeatsInARow(arrivals: Arrival[]): number {
  let repeats = 0;
  for (let i = 1; i < arrivals.length; i += 1) if (arrivals[i]!.id === arrivals[i - 1]!.id) repeats += 1;
  return repeats;
}

export async function figureWebhooks(context: BenchContext): Promise<Row[]> {
  const receiver = new Receiver();
  const url = await receiver.start();
  const port = await freePort();
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

        // Steady: the receiver up, every event's lag read.
        const steady = await raiseEvents(service, id, context.seconds * context.rounds);
        const steadyDrain = await arrived(receiver, steady.sent, 30);
        const lags = receiver.arrivals.map((a) => a.lagMs / 1000);
        const p50 = percentile(lags, 50);
        const p99 = percentile(lags, 99);
        progress(
          context,
          `fig 15 steady: ${steady.sent} events, lag p50 ${format(p50 * 1000)} ms, p99 ${format(p99 * 1000)} ms`,
        );

        // Down for as long as that lasted, with events coming; then up, with events coming still.
        const before = new Set(receiver.arrivals.map((a) => a.id)).size;
        const downSeconds = context.seconds * context.rounds;
        await receiver.stop();
        const whileDown = await raiseEvents(service, id, downSeconds);
        await receiver.start();
        const afterUp = await raiseEvents(service, id, downSeconds);
        const expected = before + whileDown.sent + afterUp.sent;
        const drainSeconds = await arrived(receiver, expected, 120);
        const distinct = new Set(receiver.arrivals.map((a) => a.id)).size;
        const missing = expected - distinct;
        const repeats = repeatsInARow(receiver.arrivals);
        progress(
          context,
          `fig 15 down ${downSeconds} s then up: ${expected - before} events, ${missing} missing, ${repeats} repeated in a row, all in ${format(drainSeconds, 1)} s after the last`,
        );
        const refused = steady.refused + whileDown.refused + afterUp.refused;
        return [
          {
            id: '15a',
            label: `webhook lag at ${eventsPerSecond} events/s, seconds from the event's commit to a local receiver getting it (p99)`,
            unit: 's',
            value: p99,
            goal: {
              text: `p99 ≤ ${lagGoalSeconds} s`,
              met: p99 <= lagGoalSeconds && refused === 0 && steadyDrain < 30,
            },
            non2xx: refused,
            errors: 0,
            rounds: `${steady.sent} events over ${context.seconds * context.rounds} s; p50 ${format(p50 * 1000)} ms, p99 ${format(p99 * 1000)} ms, max ${format(Math.max(...lags) * 1000)} ms`,
            notes: [],
          },
          {
            id: '15b',
            label: `events missing after the receiver was down ${downSeconds} s under ${eventsPerSecond} events/s, then up`,
            unit: 'events',
            value: missing,
            goal: { text: 'none missing, none twice in a row', met: missing === 0 && repeats === 0 && refused === 0 },
            non2xx: refused,
            errors: 0,
            rounds: `${expected - before} events (${whileDown.sent} while down); the last arrived ${format(drainSeconds, 1)} s after the load ended; ${repeats} repeated in a row`,
            notes: [],
          },
        ];
      },
      { port, env: { ADMIN_TOKENS: tokens.join(','), WEBHOOK_ALLOW_PRIVATE: 'true' } },
    );
  } finally {
    await receiver.stop();
  }
}
