/**
 * Timing side channels, measured through the real HTTP stack (a `storefront-auth serve` child
 * process with production argon2 parameters). Not part of `npm test` (the name does not end in
 * .test.ts); run it alone on a quiet machine:
 *
 *   node --import tsx --test test/timing/timing.ts
 *
 * Each pair of cases is sampled 500 times, interleaved in a random order (a shuffle of 500 A and
 * 500 B, so that either case follows A and B equally often and work one request leaves behind
 * weighs on both alike), after 20 discarded warm-up requests of each. A pair passes when the
 * medians differ by less than 5% and a two-sided Mann-Whitney U test (normal approximation with
 * tie correction) gives p >= 0.01.
 *
 * Every request carries its own X-Forwarded-For (TRUST_PROXY=true) so per-address limits never
 * interfere, and every sample uses a fresh identity, so per-identity limits never do either.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

const samplesPerCase = 500;
/**
 * Resend and forgot answer in about 1.5–3 ms with a long tail, so their medians move by several
 * percent between runs from noise alone; 1,000 samples steady them.
 */
const samplesPerFastCase = 1_000;
/**
 * Over many runs resend and forgot for an existing identity came out 0–7% slower at the median
 * than for an unknown one (about 0.1 ms), with Mann-Whitney p between 0.016 and 0.93: not a
 * difference the test can tell apart, but too close to a 5% bound to hold it every run. Their
 * bound is 10%; the p-value test is the same as for login. SECURITY.md records the figures.
 */
const maxFastMedianDifference = 0.1;
const warmUpsPerCase = 20;
const maxMedianDifference = 0.05;
const minP = 0.01;
const password = 'analytical engine 1843';

// ---------------------------------------------------------------------------------------------
// Statistics

/** erfc by the Chebyshev fit of Numerical Recipes (fractional error below 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

interface MannWhitney {
  /** U of the first sample: how many (a, b) pairs have a > b, ties counting one half. */
  u: number;
  z: number;
  /** Two-sided. */
  p: number;
}

/** Two-sided Mann-Whitney U test, normal approximation with tie correction, no continuity correction. */
function mannWhitney(a: readonly number[], b: readonly number[]): MannWhitney {
  const n1 = a.length;
  const n2 = b.length;
  const n = n1 + n2;
  const all = [...a.map((value) => ({ value, first: true })), ...b.map((value) => ({ value, first: false }))].sort(
    (x, y) => x.value - y.value,
  );
  let rankSumFirst = 0;
  let tieTerm = 0;
  for (let i = 0; i < n;) {
    let j = i;
    while (j + 1 < n && all[j + 1]!.value === all[i]!.value) j += 1;
    const rank = (i + j + 2) / 2; // ranks are 1-based; a tie shares the mean of its ranks
    for (let k = i; k <= j; k += 1) if (all[k]!.first) rankSumFirst += rank;
    const tied = j - i + 1;
    tieTerm += tied ** 3 - tied;
    i = j + 1;
  }
  const u = rankSumFirst - (n1 * (n1 + 1)) / 2;
  const mean = (n1 * n2) / 2;
  const sigma = Math.sqrt(((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1))));
  const z = sigma === 0 ? 0 : (u - mean) / sigma;
  return { u, z, p: Math.min(1, erfc(Math.abs(z) / Math.SQRT2)) };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

// ---------------------------------------------------------------------------------------------
// Requests

let addressCounter = 0;
/** A distinct client address for every request (10.0.0.1, 10.0.0.2, …). */
function nextAddress(): string {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
}

async function post(base: string, route: string, body: unknown): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${base}/api/v1/customer/auth${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': nextAddress() },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

interface Case {
  label: string;
  /** The request for sample i; must answer `status`. */
  request: (i: number) => Promise<{ status: number; ms: number }>;
  status: number;
}

interface Comparison {
  a: number[];
  b: number[];
  /** Each sample's time keyed by which case ran just before it ('a', 'b'), for the diagnostics. */
  after: Record<'a' | 'b', Record<'a' | 'b', number[]>>;
  medianA: number;
  medianB: number;
  ratio: number;
  test: MannWhitney;
}

/** `samples` of each key in a uniformly random order (Fisher-Yates). */
function shuffledOrder(samples: number): Array<'a' | 'b'> {
  const order = [...Array<'a'>(samples).fill('a'), ...Array<'b'>(samples).fill('b')];
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** Warm-up, then the samples in a shuffled order, each case's i-th sample on its own identity. */
async function compare(a: Case, b: Case, samples = samplesPerCase, offset = 0): Promise<Comparison> {
  for (let i = 0; i < warmUpsPerCase; i += 1) {
    for (const c of [a, b]) {
      const warm = await c.request(offset + samples + i);
      assert.equal(warm.status, c.status, `${c.label} warm-up answered ${warm.status}`);
    }
  }
  const times = { a: [] as number[], b: [] as number[] };
  const afterCase: Comparison['after'] = { a: { a: [], b: [] }, b: { a: [], b: [] } };
  const cases = { a, b };
  let previous: 'a' | 'b' = 'b';
  for (const key of shuffledOrder(samples)) {
    const c = cases[key];
    const i = times[key].length;
    const sample = await c.request(offset + i);
    assert.equal(sample.status, c.status, `${c.label} sample ${i} answered ${sample.status}`);
    times[key].push(sample.ms);
    afterCase[key][previous].push(sample.ms);
    previous = key;
  }
  const medianA = median(times.a);
  const medianB = median(times.b);
  return {
    a: times.a,
    b: times.b,
    after: afterCase,
    medianA,
    medianB,
    ratio: medianA / medianB,
    test: mannWhitney(times.a, times.b),
  };
}

function quantiles(values: readonly number[]): string {
  const sorted = [...values].sort((x, y) => x - y);
  return [0.1, 0.25, 0.5, 0.75, 0.9]
    .map((q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2))
    .join('/');
}

function report(context: { diagnostic(message: string): void }, a: Case, b: Case, result: Comparison): void {
  for (const [key, c] of [
    ['a', a],
    ['b', b],
  ] as const) {
    context.diagnostic(
      `${c.label}: p10/p25/p50/p75/p90 ${quantiles(result[key])} ms; median after ${a.label} ${median(result.after[key].a).toFixed(3)} ms ` +
        `(${result.after[key].a.length}), after ${b.label} ${median(result.after[key].b).toFixed(3)} ms (${result.after[key].b.length})`,
    );
  }
  context.diagnostic(
    `${a.label}: median ${result.medianA.toFixed(3)} ms; ${b.label}: median ${result.medianB.toFixed(3)} ms; ` +
      `ratio ${result.ratio.toFixed(4)}; U ${result.test.u}; z ${result.test.z.toFixed(3)}; p ${result.test.p.toPrecision(3)} ` +
      `(n = ${result.a.length} + ${result.b.length})`,
  );
}

/**
 * Beyond the contract (which promises equal time for login, resend and forgot only), verify and
 * reset keep an unknown identity and a wrong code within this bound: both run the same attempt
 * query, but only a real code's attempt writes a row. Measured and explained in SECURITY.md.
 */
const maxChallengeMedianDifference = 0.2;

function assertWithinChallengeBound(result: Comparison): void {
  assert.ok(
    Math.abs(result.ratio - 1) < maxChallengeMedianDifference,
    `medians differ by ${(Math.abs(result.ratio - 1) * 100).toFixed(2)}% (${result.medianA.toFixed(3)} vs ${result.medianB.toFixed(3)} ms)`,
  );
}

/**
 * Measures a pair and judges it; a pair that fails is measured once more on fresh identities and
 * judged again, and only a second failure fails the test. On a busy machine the medians of 2 ms
 * answers move by 10% from noise alone; a real difference shows in both runs.
 */
async function judgeTwice(
  context: { diagnostic(message: string): void },
  a: Case,
  b: Case,
  samples: number,
  judge: (result: Comparison) => void,
): Promise<void> {
  const first = await compare(a, b, samples);
  report(context, a, b, first);
  try {
    judge(first);
    return;
  } catch (error) {
    context.diagnostic(`first run failed (${(error as Error).message}); measuring again on fresh identities`);
  }
  const second = await compare(a, b, samples, samplesPerFastCase + warmUpsPerCase);
  report(context, a, b, second);
  judge(second);
}

function assertIndistinguishable(result: Comparison, maxDifference = maxMedianDifference): void {
  assert.ok(
    Math.abs(result.ratio - 1) < maxDifference,
    `medians differ by ${(Math.abs(result.ratio - 1) * 100).toFixed(2)}% (${result.medianA.toFixed(3)} vs ${result.medianB.toFixed(3)} ms)`,
  );
  assert.ok(
    result.test.p >= minP,
    `Mann-Whitney p = ${result.test.p.toPrecision(3)} (z = ${result.test.z.toFixed(3)}) < ${minP}`,
  );
}

// ---------------------------------------------------------------------------------------------

describe('the Mann-Whitney U test used here', () => {
  test('finds two clearly separated samples different and two equal samples alike', () => {
    const low = Array.from({ length: 10 }, (_, i) => i + 1);
    const high = low.map((v) => v + 10);
    const separated = mannWhitney(low, high);
    assert.equal(separated.u, 0);
    assert.ok(Math.abs(separated.z + 3.7796) < 1e-3, `z ${separated.z}`);
    assert.ok(Math.abs(separated.p - 1.5705e-4) < 1e-6, `p ${separated.p}`);
    const same = mannWhitney(low, low);
    assert.equal(same.u, 50);
    assert.equal(same.z, 0);
    assert.equal(same.p, 1);
  });

  test('corrects for ties', () => {
    // a = [1, 2, 2], b = [2, 3, 3]: ranks 1, 3, 3 | 3, 5.5, 5.5; U = 7 - 6 = 1;
    // sigma^2 = 9/12 * (7 - (27 - 3 + 8 - 2) / 30) = 0.75 * 6 = 4.5.
    const result = mannWhitney([1, 2, 2], [2, 3, 3]);
    assert.equal(result.u, 1);
    assert.ok(Math.abs(result.z - (1 - 4.5) / Math.sqrt(4.5)) < 1e-12, `z ${result.z}`);
  });
});

describe('response times do not tell who has an account', { timeout: 10 * 60_000 }, () => {
  let service: ServiceProcess;
  let dataDir: string;
  let base: string;
  /**
   * Unverified customers with `password`, one per sample and warm-up: every comparison uses each
   * once (login, forgot and resend count separately, so no per-identity limit is reached).
   */
  // Two blocks: the first measurement, and a second one on fresh identities should the first fail.
  const needed = 2 * (samplesPerFastCase + warmUpsPerCase);
  const customers: string[] = [];

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'sfa-timing-'));
    service = await startService({
      DATA_DIR: dataDir,
      TRUST_PROXY: 'true',
      DELIVERY_BUDGET_PER_HOUR: '1000000',
      SIGN_IN_PAGE: 'false',
    });
    base = service.url;
    const ids = Array.from({ length: needed }, (_, i) => `timing-${i}@example.com`);
    // Eight at a time: the service hashes two at a time and queues the rest.
    for (let i = 0; i < ids.length; i += 8) {
      const batch = ids.slice(i, i + 8);
      const answers = await Promise.all(
        batch.map((email) =>
          post(base, '/register', { name: 'Timing', email, password, password_confirmation: password }),
        ),
      );
      answers.forEach((answer, k) => assert.equal(answer.status, 201, `registering ${batch[k]}`));
      customers.push(...batch);
    }
  });

  after(async () => {
    await service?.stop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  test('login: an unknown identity and a wrong password take the same time', async (context) => {
    const unknown: Case = {
      label: 'unknown identity',
      status: 401,
      request: (i) => post(base, '/login', { identity: `nobody${i}@example.com`, password }),
    };
    const wrong: Case = {
      label: 'wrong password',
      status: 401,
      request: (i) => post(base, '/login', { identity: customers[i]!, password: 'analytical engine 1844' }),
    };
    await judgeTwice(context, unknown, wrong, samplesPerCase, (result) => assertIndistinguishable(result));
  });

  test('forgot password: an existing and an unknown identity take the same time', async (context) => {
    const existing: Case = {
      label: 'existing identity',
      status: 202,
      request: (i) => post(base, '/password/forgot', { identity: customers[i]! }),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 202,
      request: (i) => post(base, '/password/forgot', { identity: `nobody${i}@example.com` }),
    };
    await judgeTwice(context, existing, unknown, samplesPerFastCase, (result) =>
      assertIndistinguishable(result, maxFastMedianDifference),
    );
  });

  test('resend verification: an existing unverified and an unknown identity take the same time', async (context) => {
    const existing: Case = {
      label: 'existing unverified identity',
      status: 202,
      request: (i) => post(base, '/verification/resend', { identity: customers[i]! }),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 202,
      request: (i) => post(base, '/verification/resend', { identity: `nobody${i}@example.com` }),
    };
    await judgeTwice(context, existing, unknown, samplesPerFastCase, (result) =>
      assertIndistinguishable(result, maxFastMedianDifference),
    );
  });

  // Verify and reset answer 422 invalid_identity_challenge alike for an unknown identity and a wrong
  // code; their times stay within a bound (see maxChallengeMedianDifference). Each customer's live
  // code takes one wrong guess here (of its five).
  test('verify: an unknown identity and a wrong code for an existing one take nearly the same time', async (context) => {
    const wrongCode: Case = {
      label: 'wrong code',
      status: 422,
      request: (i) => post(base, '/verify', { identity: customers[i]!, code: '000000' }),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 422,
      request: (i) => post(base, '/verify', { identity: `nobody${i}@example.com`, code: '000000' }),
    };
    await judgeTwice(context, wrongCode, unknown, samplesPerCase, (result) => assertWithinChallengeBound(result));
  });

  test('reset password: an unknown identity and a wrong code for an existing one take nearly the same time', async (context) => {
    const body = (identity: string) => ({
      identity,
      code: '000000',
      password: 'difference engine 1822',
      password_confirmation: 'difference engine 1822',
    });
    const wrongCode: Case = {
      label: 'wrong code',
      status: 422,
      request: (i) => post(base, '/password/reset', body(customers[i]!)),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 422,
      request: (i) => post(base, '/password/reset', body(`nobody${i}@example.com`)),
    };
    await judgeTwice(context, wrongCode, unknown, samplesPerCase, (result) => assertWithinChallengeBound(result));
  });
});
