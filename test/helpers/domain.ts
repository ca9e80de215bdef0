import { authDeps } from '../../src/http/core/kit.js';
import type { AuthDeps } from '../../src/auth/deps.js';
import { parseIdentity, type ParsedIdentity } from '../../src/auth/rules/identity.js';
import type { SignInAttempt } from '../../src/auth/rules/sign-in.js';
import type { SessionClient } from '../../src/auth/tables/sessions.js';
import { forStore } from '../../src/storage/database.js';
import { firstStoreId, type StoreContext } from '../../src/store/store.js';
import type { TestApp } from './harness.js';

/**
 * The domain's flows called as plain functions, with no HTTP in between: the parts they use come
 * from a harness's services (its database, fake clock, fast hasher and keys), and the codes they
 * queue are read from its outbox with `t.codeFor`. The one place that knows how to build them.
 */
export interface Domain {
  deps: AuthDeps;
  /** The store as the flows see it, read afresh (after `updateStore`). */
  store(): Promise<StoreContext>;
  client: SessionClient;
  /** A sign-in from `client`, carrying no session, against the store read afresh. */
  attempt(): Promise<SignInAttempt>;
}

export function domainOf(t: TestApp): Domain {
  const client = { userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', address: '203.0.113.9' };
  const store = () => {
    t.services.store.invalidate();
    return t.services.store.get();
  };
  return {
    deps: {
      // The first store's: the one a single-store deployment has.
      db: forStore(t.db, firstStoreId),
      clock: t.clock,
      hasher: t.services.hasher,
      keys: t.services.keys,
      allowedCallingCodes: t.services.config.smsAllowedCallingCodes,
      // The test delivers by draining the outbox itself.
      messagesQueued: () => {},
      eventsRecorded: () => {},
      breachedPasswords: t.services.breachedPasswords,
      legacyPasswordBreached: () => {},
      passwordHook: authDeps(t.services, { id: firstStoreId }).passwordHook,
    },
    store,
    client,
    attempt: async () => ({ store: await store(), client, previousSessionId: undefined }),
  };
}

/** An email identity as the edge hands it to the domain: parsed once, normal form and counting key. */
export function email(raw: string): ParsedIdentity {
  return parseIdentity('email', raw);
}
