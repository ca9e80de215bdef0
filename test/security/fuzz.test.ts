import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { updateStore } from '../../src/store/store.js';
import { api, auth, useHarness } from '../helpers/harness.js';
import { caseArbitrary, endpoints, headerArbitrary, stores, successFor, unknownRoutes } from './fuzz-cases.js';
import { assertDocumentedAnswer, fuzzCasesSent, fuzzer, seed } from './fuzz-properties.js';

/**
 * Property-based fuzzing of every endpoint through app.inject. For any request at all:
 *   1. the answer is never a 5xx;
 *   2. it is a documented success status of that endpoint, or a problem document whose `code`
 *      is in the catalogue with that very status;
 *   3. a 4xx answer leaves every row of every table as it was, but for the bookkeeping of the
 *      refusal itself: a wrong code's counted attempt (`challenges.attempts` + 1 on one row, for a
 *      422 invalid_identity_challenge), and a new `login.failed` (401, or a refused sign-in code's
 *      422) or `rate_limited` (429) audit event.
 * The store runs with the harness's fast hasher, a fake clock moved 7 seconds per case (so the
 * per-minute limits do not turn every case into a 429, while a code stays live for ~85 cases) and
 * a fresh client address per case.
 */

const runsPerEndpointAndStore = 500;
const runsForUnknownRoutes = 300;

describe('fuzzing every endpoint', () => {
  const harness = useHarness();

  for (const store of stores) {
    describe(store.label, () => {
      for (const endpoint of endpoints) {
        test(`${endpoint.method} ${endpoint.path} (${endpoint.name}) never answers 5xx, answers only documented statuses or catalogued problems, and writes nothing when it refuses`, async (context) => {
          const t = await harness.start({ env: store.env });
          // Signing in with a code is off by default (every call 404); on here, so its paths are fuzzed.
          assert.ok((await updateStore(t.db, t.clock, { signInWithCode: true })).ok);
          t.services.store.invalidate();
          const { pool, sessions } = await seed(t, store);
          const { send, tally } = await fuzzer(t);
          await fc.assert(
            fc.asyncProperty(caseArbitrary(endpoint, pool, sessions), (fuzz) => send(fuzz, endpoint.success)),
            { numRuns: runsPerEndpointAndStore },
          );
          context.diagnostic(tally());
        });
      }

      test("any method on unknown, known and undecodable paths answers the route's own success, a preflight 204 or a catalogued problem, and writes nothing", async (context) => {
        const t = await harness.start({ env: store.env });
        const { sessions } = await seed(t, store);
        const { send, tally } = await fuzzer(t);
        await fc.assert(
          fc.asyncProperty(unknownRoutes, headerArbitrary(sessions), async (route, headers) => {
            await send({ ...route, headers, payload: undefined }, successFor(route.method, route.url));
          }),
          { numRuns: runsForUnknownRoutes },
        );
        context.diagnostic(tally());
      });
    });
  }

  describe('cases the fuzzing turned up', () => {
    for (const [method, url] of [
      ['GET', `${api}/%zz`],
      ['POST', `${auth}/%E0%A4%A`],
    ] as const) {
      test(`${method} ${url}, whose percent-encoding does not decode, answers a catalogued problem document with X-Request-ID and no framework text`, async () => {
        const t = await harness.start();
        const response = await t.app.inject({
          method,
          url,
          headers: { 'content-type': 'application/json' },
          ...(method === 'POST' ? { payload: '{}' } : {}),
        });
        assert.doesNotMatch(response.body, /FST_|is not a valid url component/, 'no framework error text');
        assertDocumentedAnswer(response, [], `${method} ${url}`, method);
      });
    }

    test('an OPTIONS request that is not a CORS preflight answers 204 or a catalogued problem document, never a text error', async () => {
      const t = await harness.start({ env: { CORS_ALLOWED_ORIGINS: 'https://shop.example' } });
      const plain = await t.app.inject({ method: 'OPTIONS', url: `${auth}/login` });
      assertDocumentedAnswer(plain, [204], 'OPTIONS without Origin', 'OPTIONS');
      const noMethod = await t.app.inject({
        method: 'OPTIONS',
        url: `${auth}/login`,
        headers: { origin: 'https://shop.example' },
      });
      assertDocumentedAnswer(noMethod, [204], 'OPTIONS without Access-Control-Request-Method', 'OPTIONS');
    });
  });

  test('ran at least 10,000 cases in all', (t) => {
    const totalCases = fuzzCasesSent();
    t.diagnostic(`fuzz cases: ${totalCases}`);
    assert.ok(totalCases >= 10_000, `${totalCases} cases`);
  });
});
