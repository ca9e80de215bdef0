import { format, withService, type BenchContext, type Row } from '../context.js';
import { sessionConnections, signedInCookie } from '../customer-load.js';
import { runLoad, type LoadResult } from '../load.js';
import { p99Row, ratioRow, readRss, runRounds, type Series } from '../rounds.js';
import { warmupSeconds } from './01-framework-overhead.js';

const introspectionToken = 'bench-introspection-token-0123456789abcdef';

/**
 * Figure 12: a backend's question beside the shopper's own: `POST /admin/v1/sessions/introspect`
 * with the shopper's whole Cookie header, against the session check on the same service.
 */
export async function figureIntrospection(context: BenchContext): Promise<Row[]> {
  return withService(
    context,
    '12',
    async (service) => {
      const cookie = await signedInCookie(context, service);
      const common = { method: 'GET', connections: sessionConnections, headers: { cookie } } as const;
      const introspect = (seconds: number) =>
        runLoad({
          ...common,
          url: service.adminUrl!,
          method: 'POST',
          path: '/admin/v1/sessions/introspect',
          seconds,
          headers: { authorization: `Bearer ${introspectionToken}` },
          body: () => ({ cookie }),
        });
      const check = (seconds: number) =>
        runLoad({ ...common, url: service.url, path: '/api/v1/customer/auth/session', seconds });
      await introspect(warmupSeconds);
      await check(warmupSeconds);
      // One memory reading a round, after whichever of the two ran second.
      const rss = readRss(context, service, '12', (round) => `12 round ${round}`);
      const rssIf = (odd: boolean) => async (round: number) => ((round % 2 === 1) === odd ? rss(round) : '');
      const [ours, checks] = await runRounds(
        context,
        '12',
        [
          { name: 'introspection', run: introspect, service, after: rssIf(false) },
          { name: 'session check', run: check, service, after: rssIf(true) },
        ],
        { ownPids: [service.pid], alternate: true },
      );
      return introspectionRows(ours!, checks!.results);
    },
    { INTROSPECTION_TOKENS: introspectionToken },
  );
}

function introspectionRows(ours: Series, checks: LoadResult[]): Row[] {
  const baselineLabel = 'session check, GET /customer/auth/session';
  const listed = (results: LoadResult[]) => results.map((result) => `${format(result.latency.p99, 1)} ms`).join(' / ');
  return [
    ratioRow({
      id: '12a',
      label: `POST /admin/v1/sessions/introspect req/s (introspection, admin listener), ${sessionConnections} connections`,
      ours,
      theirs: checks,
      names: ['introspection', 'session check'],
      baselineLabel,
      goal: 0.8,
      countTheirs: false,
    }),
    p99Row({
      id: '12b',
      label: `introspection p99 latency, ${sessionConnections} connections`,
      ours: ours.results,
      theirs: checks,
      baselineLabel,
      limit: 1.25,
      goalText: 'ratio ≤ 1.25',
      rounds: `introspection ${listed(ours.results)}; session check ${listed(checks)}`,
      notes: [],
    }),
  ];
}
