import { createHmac } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../clock.js';
import { BatchedCounters } from '../../storage/batched-counters.js';
import { keyName, type CounterStore } from '../../storage/counters.js';
import { ProblemError } from './problems.js';

export interface LimitRule {
  name: string;
  limit: number;
  windowSeconds: number;
  /**
   * Counted in this instance first and sent to the counters in batches of this many (see
   * BatchedCounters): each instance may let a subject exceed the limit by at most `batch`.
   * Only for limits that guard no credential; the others count every call in the shared store.
   */
  batch?: number;
}

const minute = 60;
const hour = 60 * minute;

/** docs/reference/rate-limits.md. Names become part of the counter keys. */
export const limits = {
  // Every call counts, a session check too: batched, so that costs no round trip. 3 is 1% of 300.
  anyCall: { name: 'any', limit: 300, windowSeconds: minute, batch: 3 },
  loginAttempts: { name: 'login', limit: 20, windowSeconds: minute },
  failedLogins: { name: 'login-failed', limit: 10, windowSeconds: 15 * minute },
  registrations: { name: 'register', limit: 20, windowSeconds: hour },
  codeAttempts: { name: 'code', limit: 30, windowSeconds: 10 * minute },
  messagesPerIdentityMinute: { name: 'message-identity-m', limit: 1, windowSeconds: minute },
  messagesPerIdentityHour: { name: 'message-identity-h', limit: 5, windowSeconds: hour },
  messagesPerAddress: { name: 'message-address', limit: 20, windowSeconds: hour },
  // Keyed by customer id: an export reads every row the customer has.
  accountExports: { name: 'account-export', limit: 1, windowSeconds: minute },
  profileChanges: { name: 'profile', limit: 20, windowSeconds: hour },
  sessionRevocations: { name: 'session-revoke', limit: 30, windowSeconds: 10 * minute },
  // Each passkey ceremony's options write a challenge row: per address, so nobody fills the table.
  passkeyChallenges: { name: 'passkey-challenge', limit: 30, windowSeconds: minute },
  // Keyed by customer id: adding and removing passkeys from the account area.
  passkeyChanges: { name: 'passkey-change', limit: 30, windowSeconds: 10 * minute },
  // Each start of a provider sign-in calls the provider (discovery, once cached, costs nothing).
  providerStarts: { name: 'provider-start', limit: 30, windowSeconds: minute },
  // Keyed by the admin token's id: a backend asks on each of its requests, from a few addresses,
  // so no per-address limit fits; this only bounds a leaked or runaway token.
  introspections: { name: 'introspect', limit: 100_000, windowSeconds: minute },
  // Keyed by the admin token's id: every other admin call (stores, hosts, customers).
  adminCalls: { name: 'admin', limit: 1_000, windowSeconds: minute },
} satisfies Record<string, LimitRule>;

export type LimitHit = [rule: LimitRule, subject: string];

/** The request being counted: its id and the client's address (a FastifyRequest is one). */
export interface Caller {
  readonly id: string;
  readonly ip: string;
}

/** A request a limit turned away, for the metrics and the audit trail. */
export interface Refusal {
  rule: LimitRule;
  /** The store whose counter refused; none for a call outside every store (the platform calls). */
  storeId: string | undefined;
  requestId: string;
  clientAddress: string;
}

export class RateLimiter {
  /** The batched rules' counts, this instance's, shared in batches through `counters`. */
  private readonly batched: BatchedCounters;

  constructor(
    private readonly counters: CounterStore,
    private readonly clock: Clock,
    /** Keys the counters' names (Keys.counters): see counterKey. */
    private readonly key: Buffer,
    /** Told of every refusal, once, with the limit that refused. */
    private readonly refused: (refusal: Refusal) => void = () => {},
    /** The most keys the batched rules' counts keep in this instance. */
    batchedEntries?: number,
  ) {
    this.batched = new BatchedCounters(counters, batchedEntries);
  }

  /**
   * Counts one request against every rule and throws 429 when any is over its limit. Counting is
   * an atomic increment, then the comparison: of N parallel requests at the limit, exactly the
   * allowed number see a count within it. A batched rule's count is this instance's (exact for
   * this instance's own calls, within the batch bound across instances).
   */
  async consume(caller: Caller, hits: LimitHit[], storeId?: string): Promise<void> {
    const nowMs = this.clock.now().getTime();
    const counts = await Promise.all(
      hits.map(([rule, subject]) => {
        const key = counterKey(this.key, rule, subject, storeId);
        if (rule.batch !== undefined) {
          return this.batched.increment(key, rule.windowSeconds, rule.batch, nowMs);
        }
        return this.counters.increment(key, rule.windowSeconds, nowMs);
      }),
    );
    let worst: { rule: LimitRule; resetAtMs: number } | undefined;
    hits.forEach(([rule], index) => {
      const count = counts[index]!;
      if (count.count > rule.limit && (worst === undefined || count.resetAtMs > worst.resetAtMs)) {
        worst = { rule, resetAtMs: count.resetAtMs };
      }
    });
    if (worst !== undefined) {
      this.refused({ rule: worst.rule, storeId, requestId: caller.id, clientAddress: caller.ip });
      throw limitedError(worst.rule, worst.resetAtMs, nowMs);
    }
  }

  /**
   * Deletes a counter without holding up the answer (a Redis round trip per successful sign-in);
   * a failure is logged, and the counter then simply runs out with its window.
   *
   * Not waiting erases no more than waiting did. The DEL is sent at the same moment as before; only
   * the answer no longer waits for it, and it erases whatever was counted before it reaches the
   * store, as an awaited DEL did (including failures counted while the password was being hashed).
   * What could newly slip under it is a failure the same client sends after the answer but before
   * the DEL lands. Within one instance none can: the memory store deletes before this returns, and
   * Redis runs the commands of one connection in order (on a cluster, a key's commands all go to
   * its node over one connection), so the next increment of the key queues behind the DEL. Across
   * instances, a failure counted elsewhere within that round trip may be erased: at most the few
   * in flight in a millisecond or so, and only once per successful sign-in, which needs the
   * password.
   */
  forget(rule: LimitRule, subject: string, storeId: string, log: Pick<FastifyBaseLogger, 'warn'>): void {
    this.counters
      .delete(counterKey(this.key, rule, subject, storeId))
      .catch((error: unknown) =>
        log.warn({ err: error, limit: rule.name }, 'a rate-limit counter could not be cleared'),
      );
  }
}

/**
 * `rl:<rule name>:<MAC of the subject>`, never the subject itself. Subjects are email addresses,
 * phone numbers, client addresses and customer ids: in the name, a key listing, a Redis dump or a
 * heap snapshot would show who was counted for as long as the window lasts, erased customers too.
 * The MAC is keyed by the deployment secret, so the names cannot be matched against guessed
 * addresses either; 128 bits of it keep two subjects from ever sharing a counter. Each counter is
 * a key of its own, hashed whole on a Redis Cluster. A store's counters are its own (the store id
 * is MACed with the subject): a flood against one store never limits another's customers.
 */
export function counterKey(key: Buffer, rule: LimitRule, subject: string, storeId?: string): string {
  const scoped = storeId === undefined ? subject : `${storeId}\u0000${subject}`;
  const mac = createHmac('sha256', key).update(scoped).digest().subarray(0, 16).toString('base64url');
  // keyName(rl, name, mac): base64url holds nothing keyName escapes, so only the rule's part is named.
  return `${rulePrefix(rule)}:${mac}`;
}

/** `keyName('rl', rule.name)`, made once per rule rather than on every request. */
const rulePrefixes = new Map<string, string>();
function rulePrefix(rule: LimitRule): string {
  let prefix = rulePrefixes.get(rule.name);
  if (prefix === undefined) {
    prefix = keyName('rl', rule.name);
    rulePrefixes.set(rule.name, prefix);
  }
  return prefix;
}

function limitedError(rule: LimitRule, resetAtMs: number, nowMs: number): ProblemError {
  const retryAfterSeconds = Math.max(1, Math.ceil((resetAtMs - nowMs) / 1000));
  return new ProblemError(
    'rate_limited',
    {},
    {
      'retry-after': retryAfterSeconds,
      'ratelimit-limit': rule.limit,
      'ratelimit-remaining': 0,
      'ratelimit-reset': retryAfterSeconds,
    },
  );
}
