/**
 * Timing side channels, measured through the real HTTP stack (a `storefront-auth serve` child
 * process with production argon2 parameters). Not part of `npm test` (the name does not end in
 * .test.ts); run it alone on a quiet machine:
 *
 *   node --import tsx --test test/timing/timing.ts
 *
 * Every pair of cases is measured once and judged by one rule. Its samples are interleaved in a
 * random order (a shuffle of n A and n B, so that either case follows A and B equally often and
 * work one request leaves behind weighs on both alike), after 20 discarded warm-up requests of
 * each. A pair fails when the difference is both real and large enough to matter: a two-sided
 * Mann-Whitney U test gives p < 0.001 AND the Hodges-Lehmann estimate of the shift between the
 * two cases exceeds the pair's bound. There is no second chance: a pair that is measured again
 * until it passes hides a leak that shows half the time.
 *
 * Every request carries its own X-Forwarded-For (TRUST_PROXY=true) so per-address limits never
 * interfere, and every sample uses a fresh identity, so per-identity limits never do either.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { embeddedDatabaseUrl } from '../../src/storage/embedded-postgres.js';
import { cliEnv, runCommand } from '../helpers/cli.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

/**
 * Login and reset answer in about 25 ms, their spread dominated by argon2; 600 samples a case put
 * the shift estimate's 95% interval within about ±1% of the median.
 */
const samplesPerSlowCase = 600;
/**
 * Resend, forgot and verify answer in 1–4 ms with a long tail, so they need more samples for the
 * same precision; they are cheap, so 1,500 a case.
 */
const samplesPerFastCase = 1_500;
/**
 * Forgot, reset and the sign-in code request and login run in each of the four store
 * configurations (email or phone identities, verification required or not), with a third to a half
 * of the samples above per configuration, so that the four of them and the phone store's customers
 * keep the whole run within about 1.5 times what one configuration took. Reset and the code login
 * are held to the wide 20% bound, which 200 and 700 samples resolve with room to spare; forgot
 * and the code request answer in a millisecond or two, where the 0.15 ms floor is the bound, and
 * 700 samples keep the shift's 95% interval well inside it (about ±0.03–0.06 ms on a busy host).
 */
const samplesPerConfigurationSlowCase = 200;
const samplesPerConfigurationFastCase = 700;
const warmUpsPerCase = 20;
/**
 * Significance: with twenty pairs a run, p < 0.001 keeps the chance that noise alone trips any
 * pair below 2%, so no pair needs a second measurement.
 */
const maxP = 0.001;
/**
 * The smallest shift that fails, relative to the median of both cases together. The rules
 * (docs/reference/) promise equal time for login, resend and forgot: they are held to 5%. Verify
 * and reset go beyond that promise and keep a known residual (a wrong code's attempt writes a row, an unknown
 * identity's does not; docs/security/enumeration.md): they are held to 20% as a regression guard.
 */
const contractShiftBound = 0.05;
const challengeShiftBound = 0.2;
/**
 * No bound is tighter than this many milliseconds: shifts below it are within loopback scheduling
 * noise on a busy host, and far below the jitter of any network path an attacker measures
 * through, where resend and forgot allow five samples an hour per identity.
 */
const minShiftBoundMs = 0.15;
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

interface Shift {
  /** Hodges-Lehmann estimate of how much slower A is than B: the median of every a - b. */
  estimate: number;
  /** Its 95% confidence interval (the distribution-free one that goes with the U test). */
  low: number;
  high: number;
}

/** The shift between two samples, as the Mann-Whitney U test sees it. */
function hodgesLehmann(a: readonly number[], b: readonly number[]): Shift {
  const differences = new Float64Array(a.length * b.length);
  let k = 0;
  for (const x of a) for (const y of b) differences[k++] = x - y;
  differences.sort();
  const m = differences.length;
  const estimate = m % 2 === 1 ? differences[m >> 1]! : (differences[(m >> 1) - 1]! + differences[m >> 1]!) / 2;
  // The interval's ends are the differences ranked C and m + 1 - C, C from U's normal approximation.
  const c = Math.max(1, Math.floor(m / 2 - 1.959964 * Math.sqrt((m * (a.length + b.length + 1)) / 12)));
  return { estimate, low: differences[c - 1]!, high: differences[m - c]! };
}

interface Verdict {
  test: MannWhitney;
  shift: Shift;
  /** The median of both samples together: what a relative bound is a share of. */
  pooledMedian: number;
  /** In milliseconds. */
  bound: number;
  /** True when the pair is told apart: p < maxP and the shift estimate beyond the bound. */
  leaks: boolean;
}

/**
 * One rule for every pair: a difference fails only when it is both real (p < maxP) and large
 * enough to matter (a shift beyond `relativeBound` of the pooled median, and never less than
 * minShiftBoundMs). Noise rarely passes the first; a real but harmless sub-bound difference, which
 * thousands of samples make "significant", never passes the second.
 */
function judge(a: readonly number[], b: readonly number[], relativeBound: number): Verdict {
  const test = mannWhitney(a, b);
  const shift = hodgesLehmann(a, b);
  const pooledMedian = median([...a, ...b]);
  const bound = Math.max(relativeBound * pooledMedian, minShiftBoundMs);
  return { test, shift, pooledMedian, bound, leaks: test.p < maxP && Math.abs(shift.estimate) > bound };
}

// ---------------------------------------------------------------------------------------------
// Requests

let addressCounter = 0;
/** A distinct client address for every request (10.0.0.1, 10.0.0.2, …). */
function nextAddress(): string {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
}

async function post(
  base: string,
  route: string,
  body: unknown,
  cookie?: string,
  /** The store's host, sent as a trusted proxy forwards it. */
  forwardedHost?: string,
  /** Any other request headers, such as Accept-Language. */
  headers: Record<string, string> = {},
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await send(
    base,
    route,
    body,
    { ...headers, ...(cookie === undefined ? {} : { cookie }) },
    forwardedHost,
  );
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

/** One POST from a client address of its own, answered as it came. */
function send(
  base: string,
  route: string,
  body: unknown,
  headers: Record<string, string> = {},
  forwardedHost?: string,
): Promise<Response> {
  return fetch(`${base}/api/v1/customer/auth${route}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-forwarded-for': nextAddress(),
      ...headers,
      ...(forwardedHost === undefined ? {} : { 'x-forwarded-host': forwardedHost }),
    },
    body: JSON.stringify(body),
  });
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
async function compare(a: Case, b: Case, samples: number): Promise<Comparison> {
  for (let i = 0; i < warmUpsPerCase; i += 1) {
    for (const c of [a, b]) {
      const warm = await c.request(samples + i);
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
    const sample = await c.request(i);
    assert.equal(sample.status, c.status, `${c.label} sample ${i} answered ${sample.status}`);
    times[key].push(sample.ms);
    afterCase[key][previous].push(sample.ms);
    previous = key;
  }
  return { a: times.a, b: times.b, after: afterCase };
}

function quantiles(values: readonly number[]): string {
  const sorted = [...values].sort((x, y) => x - y);
  return [0.1, 0.25, 0.5, 0.75, 0.9]
    .map((q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2))
    .join('/');
}

function describeVerdict(a: Case, b: Case, result: Comparison, verdict: Verdict): string {
  const { shift, test } = verdict;
  const percent = (ms: number) => `${((ms / verdict.pooledMedian) * 100).toFixed(2)}%`;
  return (
    `${a.label} vs ${b.label}: medians ${median(result.a).toFixed(3)} / ${median(result.b).toFixed(3)} ms; ` +
    `shift ${shift.estimate.toFixed(3)} ms (${percent(shift.estimate)}), 95% CI ${shift.low.toFixed(3)} to ` +
    `${shift.high.toFixed(3)} ms; bound ±${verdict.bound.toFixed(3)} ms; U ${test.u}; z ${test.z.toFixed(3)}; ` +
    `p ${test.p.toPrecision(3)} (n = ${result.a.length} + ${result.b.length})`
  );
}

/** Measures the pair once and fails it when the rule of `judge` tells the two cases apart. */
async function assertIndistinguishable(
  context: { diagnostic(message: string): void },
  a: Case,
  b: Case,
  samples: number,
  relativeBound: number,
): Promise<void> {
  const result = await compare(a, b, samples);
  for (const [key, c] of [
    ['a', a],
    ['b', b],
  ] as const) {
    context.diagnostic(
      `${c.label}: p10/p25/p50/p75/p90 ${quantiles(result[key])} ms; median after ${a.label} ${median(result.after[key].a).toFixed(3)} ms ` +
        `(${result.after[key].a.length}), after ${b.label} ${median(result.after[key].b).toFixed(3)} ms (${result.after[key].b.length})`,
    );
  }
  const verdict = judge(result.a, result.b, relativeBound);
  const summary = describeVerdict(a, b, result, verdict);
  context.diagnostic(summary);
  assert.ok(!verdict.leaks, `told apart: ${summary}`);
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

/** A seeded generator (mulberry32), so the rule's own tests give the same samples every run. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Answer times shaped like resend's: about 1.5 ms, a log-normal spread and a long tail. */
function syntheticTimes(random: () => number, count: number, shiftMs: number): number[] {
  return Array.from({ length: count }, () => {
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return 1.5 * Math.exp(0.3 * normal) + shiftMs;
  });
}

describe('the rule that judges a pair', () => {
  test('estimates the shift between two samples as the median of their differences', () => {
    const shift = hodgesLehmann([11, 12, 13], [1, 2, 3]);
    assert.equal(shift.estimate, 10);
    assert.ok(shift.low <= 10 && shift.high >= 10);
  });

  test('tells apart a shift of twice the bound, and not one of half the bound or none', () => {
    // Resend-shaped answers (1.5 ms), where the 0.15 ms floor is the bound.
    const random = seededRandom(1843);
    const times = (shiftMs: number) => syntheticTimes(random, samplesPerFastCase, shiftMs);
    assert.equal(judge(times(2 * minShiftBoundMs), times(0), contractShiftBound).leaks, true, 'A slower');
    assert.equal(judge(times(0), times(2 * minShiftBoundMs), contractShiftBound).leaks, true, 'A faster');
    assert.equal(judge(times(0), times(0), contractShiftBound).leaks, false, 'no shift');
    // Real, and with this many samples significant, but below the bound: harmless.
    const half = judge(times(minShiftBoundMs / 2), times(0), contractShiftBound);
    assert.ok(half.test.p < maxP, `half the bound is significant here (p ${half.test.p})`);
    assert.equal(half.leaks, false, 'but passes');
  });

  test('with the floor out of the way, fails a leak of twice the relative bound every time', () => {
    // Login-shaped answers (25 ms), where the relative bound, not the floor, decides.
    const random = seededRandom(1822);
    let failures = 0;
    for (let run = 0; run < 20; run += 1) {
      const slow = syntheticTimes(random, samplesPerSlowCase, 0).map(
        (ms) => ms * (25 / 1.5) * (1 + 2 * contractShiftBound),
      );
      const fast = syntheticTimes(random, samplesPerSlowCase, 0).map((ms) => ms * (25 / 1.5));
      if (judge(slow, fast, contractShiftBound).leaks) failures += 1;
    }
    assert.equal(failures, 20, `a 10% leak was caught in ${failures} of 20 runs`);
  });
});

type IdentityMode = 'email' | 'phone';

/** One identity mode's service, its customers and the identities it knows nothing of. */
interface TimingStore {
  mode: IdentityMode;
  base: string;
  /** The admin listener's base URL (its token is timingAdminToken). */
  adminUrl: string;
  dataDir: string;
  /** Unverified customers with `password`, in registration order. */
  customers: string[];
  /** An identity of the mode's form that has no account. */
  unknown: (i: number) => string;
}

const identitiesOf: Record<IdentityMode, { known: (i: number) => string; unknown: (i: number) => string }> = {
  email: { known: (i) => `timing-${i}@example.com`, unknown: (i) => `nobody${i}@example.com` },
  // Valid US numbers: the known ones in 415, the unknown ones in 650.
  phone: { known: (i) => `+1415${2_000_000 + i}`, unknown: (i) => `+1650${2_000_000 + i}` },
};

/**
 * Starts a service of the identity mode (verification not required, signing in with a code on)
 * with `needed` customers registered, before the suite's tests; stops it after them.
 */
const timingAdminToken = 'timing-admin-token-AAAAAAAAAAAAAAAAAAAAAAAA';

function timingStore(mode: IdentityMode, needed: number): TimingStore {
  const store: TimingStore = {
    mode,
    base: '',
    adminUrl: '',
    dataDir: '',
    customers: [],
    unknown: identitiesOf[mode].unknown,
  };
  let service: ServiceProcess | undefined;
  before(async () => {
    store.dataDir = mkdtempSync(path.join(os.tmpdir(), 'sfa-timing-'));
    service = await startService({
      DATA_DIR: store.dataDir,
      TRUST_PROXY: 'true',
      DELIVERY_BUDGET_PER_HOUR: '1000000',
      SIGN_IN_PAGE: 'false',
      STORE_IDENTITY_MODE: mode,
      STORE_VERIFICATION_REQUIRED: 'false',
      ADMIN_TOKENS: timingAdminToken,
      ADMIN_PORT: '0',
    });
    store.base = service.url;
    assert.ok(service.adminUrl, 'the admin listener is up');
    store.adminUrl = service.adminUrl;
    const ids = Array.from({ length: needed }, (_, i) => identitiesOf[mode].known(i));
    // Eight at a time: the service hashes two at a time and queues the rest.
    for (let i = 0; i < ids.length; i += 8) {
      const batch = ids.slice(i, i + 8);
      const answers = await Promise.all(
        batch.map((identity) =>
          post(store.base, '/register', {
            name: 'Timing',
            [mode]: identity,
            password,
            password_confirmation: password,
          }),
        ),
      );
      answers.forEach((answer, k) => assert.equal(answer.status, 201, `registering ${batch[k]}`));
      store.customers.push(...batch);
    }
    // Signing in with a code is off by default; the running service sees the change within its
    // store refresh, so wait until the path stops answering 404.
    const set = await runCommand(['store', 'set', '--sign-in-with-code', 'true'], cliEnv(store.dataDir));
    assert.equal(set.code, 0, set.stderr);
    const deadline = Date.now() + 10_000;
    while ((await post(store.base, '/code/request', { identity: store.unknown(999_999) })).status === 404) {
      assert.ok(Date.now() < deadline, 'the service took up --sign-in-with-code within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  after(async () => {
    await service?.stop();
    if (store.dataDir !== '') rmSync(store.dataDir, { recursive: true, force: true });
  });
  return store;
}

/**
 * Turns `auth.customer_verification_required` on and waits until the service applies it: the
 * right password of an unverified customer (one no pair uses) stops opening a session.
 */
async function requireVerification(store: TimingStore, probe: string): Promise<void> {
  const set = await runCommand(['store', 'set', '--verification-required', 'true'], cliEnv(store.dataDir));
  assert.equal(set.code, 0, set.stderr);
  const deadline = Date.now() + 10_000;
  while ((await post(store.base, '/login', { identity: probe, password })).status === 200) {
    assert.ok(Date.now() < deadline, 'the service took up --verification-required within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The pairs whose path could differ by store configuration (the identity's form, and whether an
 * account must be verified), run in one of the four. `first` is the first customer they use:
 * forgot and the code request allow one message a minute per identity, known or not, so each
 * configuration of a store has customers and unknown identities of its own. Forgot leaves each of them a live reset code and the code
 * request a live sign-in code, so a wrong code after them is counted against a real one.
 */
function configurationPairs(store: TimingStore, verificationRequired: boolean, first: number): void {
  const where = `${store.mode} store, verification ${verificationRequired ? 'required' : 'not required'}`;
  const known = (i: number) => store.customers[first + i]!;
  // Unknown identities are counted against the same limits as known ones, so they do not repeat.
  const unknownIdentity = (i: number) => store.unknown(first + i);
  const samples = { fast: samplesPerConfigurationFastCase, slow: samplesPerConfigurationSlowCase };

  test(`forgot password (${where}): an existing and an unknown identity take the same time`, async (context) => {
    const request = (identity: string) => post(store.base, '/password/forgot', { identity });
    const existing: Case = { label: 'existing identity', status: 202, request: (i) => request(known(i)) };
    const unknown: Case = { label: 'unknown identity', status: 202, request: (i) => request(unknownIdentity(i)) };
    await assertIndistinguishable(context, existing, unknown, samples.fast, contractShiftBound);
  });

  test(`reset password (${where}): an unknown identity and a wrong code for an existing one take nearly the same time`, async (context) => {
    const request = (identity: string) =>
      post(store.base, '/password/reset', {
        identity,
        code: '000000',
        password: 'difference engine 1822',
        password_confirmation: 'difference engine 1822',
      });
    const wrongCode: Case = { label: 'wrong code', status: 422, request: (i) => request(known(i)) };
    const unknown: Case = { label: 'unknown identity', status: 422, request: (i) => request(unknownIdentity(i)) };
    await assertIndistinguishable(context, wrongCode, unknown, samples.slow, challengeShiftBound);
  });

  test(`sign-in code request (${where}): an existing and an unknown identity take the same time`, async (context) => {
    const request = (identity: string) => post(store.base, '/code/request', { identity });
    const existing: Case = { label: 'existing identity', status: 202, request: (i) => request(known(i)) };
    const unknown: Case = { label: 'unknown identity', status: 202, request: (i) => request(unknownIdentity(i)) };
    await assertIndistinguishable(context, existing, unknown, samples.fast, contractShiftBound);
  });

  // A wrong code is counted against the live sign-in code the request pair left, as in verify and
  // reset, and is held to the same wider bound.
  test(`sign-in code login (${where}): an unknown identity and a wrong code for an existing one take nearly the same time`, async (context) => {
    const request = (identity: string) => post(store.base, '/code/login', { identity, code: '000000' });
    const wrongCode: Case = { label: 'wrong code', status: 422, request: (i) => request(known(i)) };
    const unknown: Case = { label: 'unknown identity', status: 422, request: (i) => request(unknownIdentity(i)) };
    await assertIndistinguishable(context, wrongCode, unknown, samples.fast, challengeShiftBound);
  });
}

/** Customers one configuration's pairs use: a sample each, and a warm-up each. */
const customersPerConfiguration =
  Math.max(samplesPerConfigurationFastCase, samplesPerConfigurationSlowCase) + warmUpsPerCase;

/**
 * Each identity mode runs its configuration pairs without, then with, verification required; the
 * email store also runs the pairs that do not depend on the configuration, in the default one.
 */
for (const mode of ['email', 'phone'] as const) {
  describe(`response times do not tell who has an account: ${mode} store`, { timeout: 15 * 60_000 }, () => {
    /**
     * Two configurations' customers, and for the email store one per sample and warm-up of the
     * default-configuration pairs (login, resend and verify count separately, so no per-identity
     * limit is reached), and one more to probe the verification setting with.
     */
    const needed =
      Math.max(2 * customersPerConfiguration, mode === 'email' ? samplesPerFastCase + warmUpsPerCase : 0) + 1;
    const store = timingStore(mode, needed);

    if (mode === 'email') defaultConfigurationPairs(store);
    describe('verification not required', () => configurationPairs(store, false, 0));
    describe('verification required', () => {
      before(() => requireVerification(store, store.customers[needed - 1]!));
      configurationPairs(store, true, customersPerConfiguration);
    });
  });
}

/**
 * `count` customers imported through `customers import`, each with the same hash of the fixtures
 * (made by its original software) whose form starts with `prefix`, or with none (null); their identities.
 */
async function importAccounts(store: TimingStore, prefix: string | null, count: number): Promise<string[]> {
  const vectors = JSON.parse(readFileSync(new URL('../fixtures/legacy-hashes.json', import.meta.url), 'utf8')) as {
    hash: string;
  }[];
  const hash = prefix === null ? undefined : vectors.find((vector) => vector.hash.startsWith(prefix))!.hash;
  const label = prefix === null ? 'nohash' : prefix.replace(/\W/g, '');
  const identities = Array.from({ length: count }, (_, i) => `imported-${label}-${i}@example.com`);
  const file = path.join(store.dataDir, `import-${label}.ndjson`);
  writeFileSync(
    file,
    identities.map((email) => JSON.stringify({ email, verified: true, password_hash: hash })).join('\n'),
  );
  const imported = await runCommand(['customers', 'import', file], cliEnv(store.dataDir));
  assert.equal(imported.code, 0, imported.stderr);
  return identities;
}

/** Registers each email with `password`, eight at a time as the suite's customers are; their ids. */
async function registerAccounts(store: TimingStore, emails: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < emails.length; i += 8) {
    const batch = emails.slice(i, i + 8);
    const answers = await Promise.all(
      batch.map((email) =>
        send(store.base, '/register', { name: 'Timing', email, password, password_confirmation: password }),
      ),
    );
    for (const [k, answer] of answers.entries()) {
      assert.equal(answer.status, 201, `registering ${batch[k]}`);
      ids.push(((await answer.json()) as { id: string }).id);
    }
  }
  return ids;
}

/**
 * `count` customers registered with `password` and then blocked through the admin API, as the
 * platform's staff block one; their identities. The right password of the last one must answer
 * 403 account_blocked, so the block is in force before any sample is taken.
 */
async function blockedAccounts(store: TimingStore, count: number): Promise<string[]> {
  const identities = Array.from({ length: count }, (_, i) => `blocked-${i}@example.com`);
  for (const id of await registerAccounts(store, identities)) {
    const blocked = await fetch(`${store.adminUrl}/admin/v1/stores/default/customers/${id}/block`, {
      method: 'POST',
      headers: { authorization: `Bearer ${timingAdminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'timing' }),
    });
    const answer = await blocked.text();
    assert.equal(blocked.status, 200, answer);
  }
  const probe = await post(store.base, '/login', { identity: identities.at(-1)!, password });
  assert.equal(probe.status, 403, 'a blocked account with its right password answers 403');
  return identities;
}

/**
 * `count` customers registered with `password` and given a second step: the store is turned to
 * `--two-factor optional` and their `two_factor` flag set in the service's database (setting up
 * hundreds through the API would take far longer; a wrong password never reaches the secret). The
 * right password of the last one must answer 200 two_factor_required, so the second step is in
 * force before any sample is taken; their identities.
 */
async function secondStepAccounts(store: TimingStore, count: number): Promise<string[]> {
  const identities = Array.from({ length: count }, (_, i) => `second-step-${i}@example.com`);
  await registerAccounts(store, identities);
  const set = await runCommand(['store', 'set', '--two-factor', 'optional'], cliEnv(store.dataDir));
  assert.equal(set.code, 0, set.stderr);
  const database = new pg.Client({ connectionString: embeddedDatabaseUrl(store.dataDir) });
  await database.connect();
  try {
    const updated = await database.query('UPDATE customers SET two_factor = true WHERE identity_value = ANY($1)', [
      identities,
    ]);
    assert.equal(updated.rowCount, count);
  } finally {
    await database.end();
  }
  // The running service sees the store setting within its store refresh: wait until the right
  // password of the last one asks for the second step instead of opening a session.
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = await send(store.base, '/login', { identity: identities.at(-1)!, password });
    const body = (await probe.json()) as { auth_type?: string };
    if (probe.status === 200 && body.auth_type === 'two_factor_required') break;
    assert.ok(Date.now() < deadline, 'the service took up --two-factor optional within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return identities;
}

/** The store's old system, on this machine: it says no to every password, at once. */
async function refusingOldSystem(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"valid":false}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/password-check`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The pairs run in the default configuration only (email store, verification not required). */
function defaultConfigurationPairs(store: TimingStore): void {
  const customers = store.customers;

  test('login: an unknown identity and a wrong password take the same time', async (context) => {
    const unknown: Case = {
      label: 'unknown identity',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: store.unknown(i), password }),
    };
    const wrong: Case = {
      label: 'wrong password',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: customers[i]!, password: 'analytical engine 1844' }),
    };
    await assertIndistinguishable(context, unknown, wrong, samplesPerSlowCase, contractShiftBound);
  });

  // A blocked account answers a wrong password as any wrong one: its block is looked at only once
  // the password was found right, so the time tells no more than the answer.
  test('login: an unknown identity, a wrong password and a blocked account with a wrong password take the same time', async (context) => {
    const blocked = await blockedAccounts(store, samplesPerSlowCase + warmUpsPerCase);
    const wrongPassword = 'analytical engine 1844';
    const unknown: Case = {
      label: 'unknown identity',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: store.unknown(400_000 + i), password: wrongPassword }),
    };
    const wrong: Case = {
      label: 'wrong password',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: customers[i]!, password: wrongPassword }),
    };
    const blockedWrong: Case = {
      label: 'blocked account, wrong password',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: blocked[i]!, password: wrongPassword }),
    };
    await assertIndistinguishable(context, unknown, blockedWrong, samplesPerSlowCase, contractShiftBound);
    await assertIndistinguishable(context, wrong, blockedWrong, samplesPerSlowCase, contractShiftBound);
  });

  // Accounts imported with another system's hash (cheaper than argon2id, then dearer): a wrong
  // password is checked against that hash until a right one re-hashes it. phpass goes first: the
  // floors follow a store's recent legacy checks, and bcrypt's then take their place.
  for (const [k, prefix] of ['$P$', '$2y$'].entries()) {
    test(`login: an unknown identity and a wrong password for an account imported with a ${prefix} hash take the same time`, async (context) => {
      const identities = await importAccounts(store, prefix, samplesPerSlowCase + warmUpsPerCase);
      const unknown: Case = {
        label: 'unknown identity',
        status: 401,
        request: (i) => post(store.base, '/login', { identity: store.unknown(100_000 * (k + 1) + i), password }),
      };
      const wrong: Case = {
        label: `wrong password, ${prefix} hash`,
        status: 401,
        request: (i) => post(store.base, '/login', { identity: identities[i]!, password: 'analytical engine 1844' }),
      };
      await assertIndistinguishable(context, unknown, wrong, samplesPerSlowCase, contractShiftBound);
    });
  }

  // An account imported without a hash, in a store whose old system answers for its passwords: a
  // wrong password is a question over HTTP, held to an argon2 check's time at least.
  test('login: an unknown identity and a wrong password for an account the old system is asked about take the same time', async (context) => {
    const oldSystem = await refusingOldSystem();
    try {
      const set = await fetch(`${store.adminUrl}/admin/v1/stores/default/password-hook`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${timingAdminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: oldSystem.url, secret: `whsec_${randomBytes(32).toString('base64')}` }),
      });
      assert.equal(set.status, 201, await set.text());
      const identities = await importAccounts(store, null, samplesPerSlowCase + warmUpsPerCase);
      const unknown: Case = {
        label: 'unknown identity',
        status: 401,
        request: (i) => post(store.base, '/login', { identity: store.unknown(300_000 + i), password }),
      };
      const asked: Case = {
        label: 'wrong password, asked of the old system',
        status: 401,
        request: (i) => post(store.base, '/login', { identity: identities[i]!, password: 'analytical engine 1844' }),
      };
      await assertIndistinguishable(context, unknown, asked, samplesPerSlowCase, contractShiftBound);
    } finally {
      await oldSystem.close();
    }
  });

  test('resend verification: an existing unverified and an unknown identity take the same time', async (context) => {
    const existing: Case = {
      label: 'existing unverified identity',
      status: 202,
      request: (i) => post(store.base, '/verification/resend', { identity: customers[i]! }),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 202,
      request: (i) => post(store.base, '/verification/resend', { identity: store.unknown(i) }),
    };
    await assertIndistinguishable(context, existing, unknown, samplesPerFastCase, contractShiftBound);
  });

  // Verify answers 422 invalid_identity_challenge alike for an unknown identity and a wrong code;
  // its times are held to the wider bound (see challengeShiftBound). Each customer's live code
  // takes one wrong guess here (of its five).
  test('verify: an unknown identity and a wrong code for an existing one take nearly the same time', async (context) => {
    const wrongCode: Case = {
      label: 'wrong code',
      status: 422,
      request: (i) => post(store.base, '/verify', { identity: customers[i]!, code: '000000' }),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 422,
      request: (i) => post(store.base, '/verify', { identity: store.unknown(i), code: '000000' }),
    };
    await assertIndistinguishable(context, wrongCode, unknown, samplesPerFastCase, challengeShiftBound);
  });

  // A signed-in customer asking to move to an identity that has an account, or to a free one: the
  // 202 goes out before the lookup, so the two must take the same time (held to the 5% bound).
  test('identity change: a taken and a free new identity take the same time', async (context) => {
    const mover = 'timing-mover@example.com';
    const registered = await post(store.base, '/register', {
      name: 'Timing',
      email: mover,
      password,
      password_confirmation: password,
    });
    assert.equal(registered.status, 201);
    const login = await fetch(`${store.base}/api/v1/customer/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextAddress() },
      body: JSON.stringify({ identity: mover, password }),
    });
    assert.equal(login.status, 200);
    const session = login.headers
      .getSetCookie()
      .find((c) => c.startsWith('storefront_session='))!
      .split(';')[0]!;
    const taken: Case = {
      label: 'taken identity',
      status: 202,
      request: (i) =>
        post(store.base, '/identity/change', { email: customers[i]!, current_password: password }, session),
    };
    const free: Case = {
      label: 'free identity',
      status: 202,
      request: (i) =>
        post(store.base, '/identity/change', { email: `free${i}@example.com`, current_password: password }, session),
    };
    await assertIndistinguishable(context, taken, free, samplesPerSlowCase, contractShiftBound);
  });

  // An account with a second step answers a wrong password as any wrong one: the flag is looked at
  // only once the password was found right, so the time must not tell who set one up. Its plain
  // counterparts are customers no other login pair uses (the login pairs take the first
  // samplesPerSlowCase + warmUpsPerCase), so no identity nears the failed-login limit. It runs last
  // of these pairs: the store offers the second step from then on.
  test('login: a wrong password for an account with a second step and one without take the same time', async (context) => {
    const secondStep = await secondStepAccounts(store, samplesPerSlowCase + warmUpsPerCase);
    const wrongPassword = 'analytical engine 1844';
    const firstUnused = samplesPerSlowCase + warmUpsPerCase;
    const wrongPlain: Case = {
      label: 'wrong password',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: customers[firstUnused + i]!, password: wrongPassword }),
    };
    const wrongSecondStep: Case = {
      label: 'second step set up, wrong password',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: secondStep[i]!, password: wrongPassword }),
    };
    await assertIndistinguishable(context, wrongPlain, wrongSecondStep, samplesPerSlowCase, contractShiftBound);
  });
}

/**
 * An identity with an account in one store is, for every other store of the deployment, an
 * identity without one: the same answers in the same time. The customers are registered in the
 * first store; a second store is then made, and every request goes to it.
 */
describe('response times do not tell who has an account in another store', { timeout: 15 * 60_000 }, () => {
  // One more customer than the samples use: the probe that tells when the new store is served.
  const needed = samplesPerSlowCase + warmUpsPerCase + 1;
  const store = timingStore('email', needed);
  const other = 'b.shop.test';
  before(async () => {
    const created = await runCommand(
      ['store', 'create', '--slug', 'shop-b', '--name', 'Shop B', '--host', other],
      cliEnv(store.dataDir),
    );
    assert.equal(created.code, 0, created.stderr);
    // The first store's customer and password sign in until the service serves the new store on
    // its host; from then on that host knows no such account.
    const probe = store.customers[needed - 1]!;
    const deadline = Date.now() + 10_000;
    while ((await post(store.base, '/login', { identity: probe, password }, undefined, other)).status !== 401) {
      assert.ok(Date.now() < deadline, 'the service took up the new store within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  test('login: an identity of another store and an unknown one take the same time', async (context) => {
    const elsewhere: Case = {
      label: 'identity of another store',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: store.customers[i]!, password }, undefined, other),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 401,
      request: (i) => post(store.base, '/login', { identity: store.unknown(i), password }, undefined, other),
    };
    await assertIndistinguishable(context, elsewhere, unknown, samplesPerSlowCase, contractShiftBound);
  });

  test('forgot password: an identity of another store and an unknown one take the same time', async (context) => {
    const elsewhere: Case = {
      label: 'identity of another store',
      status: 202,
      request: (i) => post(store.base, '/password/forgot', { identity: store.customers[i]! }, undefined, other),
    };
    const unknown: Case = {
      label: 'unknown identity',
      status: 202,
      request: (i) => post(store.base, '/password/forgot', { identity: store.unknown(i) }, undefined, other),
    };
    await assertIndistinguishable(context, elsewhere, unknown, samplesPerSlowCase, contractShiftBound);
  });
});

/** ASCII digits as an Arabic keyboard types them (Arabic-Indic, U+0660–U+0669). */
function arabicIndic(ascii: string): string {
  return ascii.replace(/[0-9]/g, (digit) => String.fromCodePoint(0x0660 + Number(digit)));
}

/** An answer as a client compares it: status, body without its request id, headers without those that differ by design. */
async function comparable(response: Response): Promise<unknown> {
  const text = await response.text();
  let body: unknown = text;
  try {
    const { request_id: _id, ...rest } = JSON.parse(text) as Record<string, unknown>;
    body = rest;
  } catch {
    // Not JSON: compared as text.
  }
  const headers = [...response.headers].filter(([name]) => !['x-request-id', 'date', 'content-length'].includes(name));
  return { status: response.status, body, headers };
}

/**
 * The same questions asked in Arabic: a store speaking English and Arabic, a browser asking for
 * Arabic (`Accept-Language: ar`) and phone numbers typed in Arabic-Indic digits, beside the same
 * in English with ASCII digits. Known and unknown identities are compared within one language,
 * so the pairs hold whatever language the problem documents are written in.
 */
describe('answers in Arabic do not tell who has an account either: phone store', { timeout: 15 * 60_000 }, () => {
  const adminToken = timingAdminToken;
  const perLanguage = Math.max(samplesPerSlowCase, samplesPerConfigurationFastCase) + warmUpsPerCase + 1;
  const languages = [
    { tag: 'en', typed: (ascii: string) => ascii },
    { tag: 'ar', typed: arabicIndic },
  ] as const;
  const known = (language: number, i: number) => `+1415${3_000_000 + language * perLanguage + i}`;
  const unknown = (language: number, i: number) => `+1650${3_000_000 + language * perLanguage + i}`;
  let base = '';
  let dataDir = '';
  let service: ServiceProcess | undefined;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'sfa-timing-'));
    service = await startService({
      DATA_DIR: dataDir,
      TRUST_PROXY: 'true',
      DELIVERY_BUDGET_PER_HOUR: '1000000',
      SIGN_IN_PAGE: 'false',
      STORE_IDENTITY_MODE: 'phone',
      STORE_VERIFICATION_REQUIRED: 'false',
      ADMIN_TOKENS: adminToken,
      ADMIN_PORT: '0',
    });
    base = service.url;
    const admin = (route: string, method = 'GET', body?: unknown) =>
      fetch(`${service!.adminUrl}/admin/v1${route}`, {
        method,
        headers: {
          authorization: `Bearer ${adminToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const listed = (await (await admin('/stores')).json()) as { stores: Array<{ id: string }> };
    const storeId = listed.stores[0]!.id;
    const patched = await admin(`/stores/${storeId}`, 'PATCH', { languages: ['en', 'ar'], default_language: 'en' });
    assert.equal(patched.status, 200, await patched.text());
    const ids = languages.flatMap((_, language) => Array.from({ length: perLanguage }, (_, i) => known(language, i)));
    for (let i = 0; i < ids.length; i += 8) {
      const batch = ids.slice(i, i + 8);
      const answers = await Promise.all(
        batch.map((phone) =>
          post(base, '/register', { name: 'Timing', phone, password, password_confirmation: password }),
        ),
      );
      answers.forEach((answer, k) => assert.equal(answer.status, 201, `registering ${batch[k]}`));
    }
  });
  after(async () => {
    await service?.stop();
    if (dataDir !== '') rmSync(dataDir, { recursive: true, force: true });
  });

  languages.forEach(({ tag, typed }, language) => {
    const headers = { 'accept-language': tag };
    const where = `Accept-Language: ${tag}, numbers typed in ${tag === 'ar' ? 'Arabic-Indic' : 'ASCII'} digits`;
    // The last customer and unknown number of the language: for the answers compared whole.
    const probe = perLanguage - 1;

    test(`login (${where}): an unknown identity and a wrong password answer alike and take the same time`, async (context) => {
      const login = (identity: string, secret: string) =>
        send(base, '/login', { identity: typed(identity), password: secret }, headers);
      const wrongAnswer = await comparable(await login(known(language, probe), 'analytical engine 1844'));
      const unknownAnswer = await comparable(await login(unknown(language, probe), password));
      assert.deepEqual(wrongAnswer, unknownAnswer);
      assert.equal((wrongAnswer as { status: number }).status, 401);
      const request = (identity: string, secret: string) =>
        post(base, '/login', { identity: typed(identity), password: secret }, undefined, undefined, headers);
      const unknownCase: Case = {
        label: 'unknown identity',
        status: 401,
        request: (i) => request(unknown(language, i), password),
      };
      const wrong: Case = {
        label: 'wrong password',
        status: 401,
        request: (i) => request(known(language, i), 'analytical engine 1844'),
      };
      await assertIndistinguishable(context, unknownCase, wrong, samplesPerSlowCase, contractShiftBound);
    });

    test(`forgot password (${where}): an existing and an unknown identity answer alike and take the same time`, async (context) => {
      const forgot = (identity: string) => send(base, '/password/forgot', { identity: typed(identity) }, headers);
      const existingAnswer = await comparable(await forgot(known(language, probe)));
      const unknownAnswer = await comparable(await forgot(unknown(language, probe)));
      assert.deepEqual(existingAnswer, unknownAnswer);
      assert.equal((existingAnswer as { status: number }).status, 202);
      const request = (identity: string) =>
        post(base, '/password/forgot', { identity: typed(identity) }, undefined, undefined, headers);
      const existing: Case = { label: 'existing identity', status: 202, request: (i) => request(known(language, i)) };
      const unknownCase: Case = {
        label: 'unknown identity',
        status: 202,
        request: (i) => request(unknown(language, i)),
      };
      await assertIndistinguishable(
        context,
        existing,
        unknownCase,
        samplesPerConfigurationFastCase,
        contractShiftBound,
      );
    });
  });
});
