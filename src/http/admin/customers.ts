import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { eraseAccount } from '../../auth/flows/erasure.js';
import { revokeSessions } from '../../auth/flows/session-revocation.js';
import {
  blockCustomer,
  changeCustomer,
  createCustomer,
  customerDetails,
  removeSecondStep,
  requirePasswordReset,
  unblockCustomer,
} from '../../auth/flows/staff.js';
import { type AuthDeps } from '../../auth/deps.js';
import type { AuditEvent } from '../../audit.js';
import type { FastifyRequest } from 'fastify';
import { parseIdentity } from '../../auth/rules/identity.js';
import { parseImportLine } from '../../auth/rules/import-line.js';
import { findCustomerById, findCustomerByIdentity } from '../../auth/tables/customers.js';
import { findStaffCustomer, searchCustomers } from '../../auth/tables/staff-customers.js';
import { forStore, inStore } from '../../storage/database.js';
import { requestHash, runOnce } from '../../store/idempotency.js';
import type { StoreContext } from '../../store/store.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { authDeps, type AuthDepsSource } from '../core/kit.js';
import { ProblemError } from '../core/problems.js';
import {
  adminCaller,
  adminStoreKit,
  countAdminCalls,
  CustomerParams,
  IdempotencyHeaders,
  pageSize,
  StoreParams,
  storeProblems,
  withBody,
} from './admin-kit.js';
import {
  BlockBody,
  CreateCustomerBody,
  CustomerList,
  CustomerListQuery,
  CustomerPatch,
  DeletedCustomer,
  RevokedSessions,
  StaffCustomer,
} from './customer-schemas.js';
import { changeOf, cursorOf, described, identityPrefixOf, listed, notFound, positionOf } from './customer-input.js';

/** What authDeps needs, and the admin routes' own store, limiter and audit trail. */
type Deps = AuthDepsSource & Pick<Edge, 'store' | 'limiter' | 'audit'>;

export function customerRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, config, limiter } = services;
  const { storeNamed, audit } = adminStoreKit(services);

  /** The customer as the answer of every call about one shows them. */
  async function answerOf(store: StoreContext, id: string) {
    const details = await customerDetails({ db: forStore(db, store.id), clock }, id);
    if (details === null) throw notFound();
    return described(details, clock.now());
  }

  /** A change of one customer by staff: the flow, its audit entry, then the customer as they now are. */
  async function changeOne(
    request: FastifyRequest & { params: { id: string; customer_id: string } },
    event: AuditEvent,
    work: (deps: AuthDeps, store: StoreContext, id: string) => Promise<{ ok: boolean }>,
    details: Record<string, string> = {},
  ) {
    const store = await storeNamed(request.params.id);
    const id = request.params.customer_id;
    if (!(await work(authDeps(services, store), store, id)).ok) throw notFound();
    audit(request, store.id, event, details, id);
    return answerOf(store, id);
  }

  return async (app) => {
    countAdminCalls(app, limiter);

    app.get(
      '/stores/:id/customers',
      declareRoute({
        operationId: 'listStoreCustomers',
        summary: "Find a store's customers",
        description:
          "A page of the store's customers: with `query`, those whose email, phone or name starts with it; with `identity`, the one who holds exactly that identity (normalized as at sign-in); with neither, all, in identity order. `status` keeps those in that state. Each page reads only its own rows from an index, whatever the store's size. A customer of another store is never listed. Recorded as `customer.looked_up` when `identity` names one.",
        tag: 'customers',
        bearer: adminCaller,
        params: StoreParams,
        query: CustomerListQuery,
        problems: [...storeProblems, 'validation_failed'],
        answer: CustomerList,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const sdb = forStore(db, store.id);
        const now = clock.now();
        const { query, identity, status, cursor, limit } = request.query;
        if (identity !== undefined) {
          const row = await findCustomerByIdentity(sdb, parseIdentity(store.identityMode, identity));
          const found = row === null ? null : await findStaffCustomer(sdb, row.id);
          if (found === null) return { customers: [], next_cursor: null };
          audit(request, store.id, 'customer.looked_up', {}, found.id);
          const shown = listed(found, now);
          return { customers: status === undefined || shown.status === status ? [shown] : [], next_cursor: null };
        }
        const page = await searchCustomers(sdb, {
          identityPrefix: query === undefined ? '' : identityPrefixOf(store.identityMode, query),
          namePrefix: query === undefined ? '' : query.trim().toLowerCase(),
          status,
          after: positionOf(cursor),
          limit: pageSize(limit),
          now,
        });
        return {
          customers: page.rows.map((row) => listed(row, now)),
          next_cursor: page.next === null ? null : cursorOf(page.next),
        };
      },
    );

    app.get(
      '/stores/:id/customers/:customer_id',
      declareRoute({
        operationId: 'getStoreCustomer',
        summary: "Read a store's customer",
        description:
          "The customer with where their account stands and what support asks about: their block, last sign-in, live sessions, passkeys and linked providers. Recorded as `customer.looked_up` with the token's id.",
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found'],
        answer: StaffCustomer,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const answer = await answerOf(store, request.params.customer_id);
        audit(request, store.id, 'customer.looked_up', {}, answer.id);
        return answer;
      },
    );

    app.post(
      '/stores/:id/customers',
      declareRoute({
        operationId: 'createStoreCustomer',
        summary: 'Create a customer',
        description:
          "Makes one customer as an import line would: `verified` is the staff's word that the customer controls the identity (a `customer.verified` follows); `password_hash` in any format an import takes; `invite` sends a customer without one a set-password code valid for a week. With an `Idempotency-Key`, a retry of the same call within 24 hours answers the first answer again and makes nothing. `422 identity_unavailable` when the identity has an account. Recorded as `customer.created` with the token's id; raises `customer.registered` (`method: staff`).",
        tag: 'customers',
        bearer: adminCaller,
        params: StoreParams,
        headers: IdempotencyHeaders,
        body: CreateCustomerBody,
        problems: [...withBody, ...storeProblems, 'identity_unavailable', 'idempotency_key_reused'],
        answer: StaffCustomer,
        status: 201,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const { identity, ...fields } = request.body;
        const line = JSON.stringify({ [store.identityMode]: identity, ...fields });
        const parsed = parseImportLine(store, line, 1, {
          now: clock.now(),
          allowedCallingCodes: config.smsAllowedCallingCodes,
        });
        if ('refusals' in parsed) {
          const errors: Record<string, string[]> = {};
          for (const { field, reason } of parsed.refusals) {
            const name = field === store.identityMode ? 'identity' : field;
            (errors[name] ??= []).push(reason);
          }
          throw new ProblemError('validation_failed', { errors });
        }
        const deps = authDeps(services, store);
        const make = async (tx: Parameters<typeof createCustomer>[0]) => {
          const id = await createCustomer(tx, deps, store, parsed.record);
          if (id === null) throw new ProblemError('identity_unavailable');
          return { status: 201, body: { id } };
        };
        const key = request.headers['idempotency-key'];
        const call = `POST /stores/${store.id}/customers`;
        const result =
          key === undefined
            ? { ...(await deps.db.transaction(make)), replayed: false }
            : await runOnce(db, clock, key, requestHash(call, request.body), (tx) => make(inStore(tx, store.id)));
        if ('mismatch' in result) throw new ProblemError('idempotency_key_reused');
        const { id } = result.body as { id: string };
        if (result.replayed) reply.header('idempotency-replayed', 'true');
        else {
          deps.messagesQueued();
          deps.eventsRecorded();
          audit(request, store.id, 'customer.created', {}, id);
        }
        return reply.code(201).send(await answerOf(store, id));
      },
    );

    app.patch(
      '/stores/:id/customers/:customer_id',
      declareRoute({
        operationId: 'changeStoreCustomer',
        summary: "Change a store's customer",
        description:
          "A JSON merge patch of `name`, `email` or `phone` (as the store signs in), `verified`, `locale` (null: the store's default) and `external_id`. A new email or phone is proven as `verified` says (absent: not proven), ends every session and live code, and the old one gets the notice a customer's own change sends (`customer.identity_changed`). `verified: true` on an unproven account is its first proof of control: what was set up before it (sessions, passkeys, links) ends, as with any first proof. `422 identity_unavailable` when another account has the identity. Recorded as `customer.changed` naming the fields.",
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        body: CustomerPatch,
        problems: [...withBody, ...storeProblems, 'not_found', 'identity_unavailable'],
        answer: StaffCustomer,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const change = changeOf(store, request.body, config.smsAllowedCallingCodes);
        const result = await changeCustomer(authDeps(services, store), store, request.params.customer_id, change);
        if (!result.ok) throw result.error === 'not_found' ? notFound() : new ProblemError('identity_unavailable');
        audit(
          request,
          store.id,
          'customer.changed',
          { fields: Object.keys(request.body).sort().join(',') },
          result.value,
        );
        return answerOf(store, result.value);
      },
    );

    app.post(
      '/stores/:id/customers/:customer_id/block',
      declareRoute({
        operationId: 'blockStoreCustomer',
        summary: "Block a store's customer",
        description:
          'Every session ends at once, and none opens while the block holds: a sign-in with the right password, code, passkey or provider answers `403 account_blocked` (with `until` when set); a wrong one answers as any wrong one. Forgot, resend and code requests still answer `202` and send nothing. Blocking again replaces the reason and end. Recorded as `customer.blocked`; raises `customer.blocked`.',
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        body: BlockBody,
        problems: [...withBody, ...storeProblems, 'not_found'],
        answer: StaffCustomer,
      }),
      async (request) => {
        const { reason, until } = request.body;
        const end = until === undefined ? null : new Date(until);
        if (end !== null && end.getTime() <= clock.now().getTime())
          throw new ProblemError('validation_failed', { errors: { until: ['Must be in the future.'] } });
        const block = { reason, until: end };
        const details: Record<string, string> = until === undefined ? {} : { until };
        return changeOne(request, 'customer.blocked', (deps, _store, id) => blockCustomer(deps, id, block), details);
      },
    );

    app.post(
      '/stores/:id/customers/:customer_id/unblock',
      declareRoute({
        operationId: 'unblockStoreCustomer',
        summary: "Unblock a store's customer",
        description:
          'The customer can sign in again. A customer not blocked is left as they are. Recorded as `customer.unblocked`; raises `customer.unblocked` when a block was lifted.',
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found'],
        answer: StaffCustomer,
      }),
      async (request) => changeOne(request, 'customer.unblocked', (deps, _store, id) => unblockCustomer(deps, id)),
    );

    app.post(
      '/stores/:id/customers/:customer_id/require-password-reset',
      declareRoute({
        operationId: 'requireStoreCustomerPasswordReset',
        summary: "Require a store's customer to reset their password",
        description:
          "The password stops signing in at once (a login checking it now opens nothing), every session and live code ends, and a reset code is sent (none while a block holds): the customer sets a new password with forgot/reset's second step, or asks for a new code with forgot. Recorded as `customer.reset_required`; raises `customer.password_changed` (`how: retired`).",
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found'],
        answer: StaffCustomer,
      }),
      async (request) => changeOne(request, 'customer.reset_required', requirePasswordReset),
    );

    app.post(
      '/stores/:id/customers/:customer_id/remove-two-factor',
      declareRoute({
        operationId: 'removeStoreCustomerTwoFactor',
        summary: "Remove a store's customer's second step",
        description:
          'For a shopper who lost both their authenticator app and their recovery codes, once support has made sure of who they are: the secret and recovery codes are deleted, sign-ins waiting for them end, and the password (or code, or provider) alone signs in again; the customer may set up a new one. Sends them the notice of turning it off. A customer without one is left as they are. Recorded as `customer.two_factor_removed`.',
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found'],
        answer: StaffCustomer,
      }),
      async (request) => changeOne(request, 'customer.two_factor_removed', removeSecondStep),
    );

    app.post(
      '/stores/:id/customers/:customer_id/revoke-sessions',
      declareRoute({
        operationId: 'revokeStoreCustomerSessions',
        summary: "Sign a store's customer out everywhere",
        description:
          "Ends every session of the customer at once: their next call on any instance is unauthenticated. Recorded as `session.revoked` with `count`, `by: admin` and the token's id.",
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found'],
        answer: RevokedSessions,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const deps = authDeps(services, store);
        const row = await findCustomerById(deps.db, request.params.customer_id);
        if (row === null) throw notFound();
        const count = await revokeSessions(deps, row.id, { by: 'staff' });
        audit(request, store.id, 'session.revoked', { count: String(count) }, row.id);
        return { count };
      },
    );

    app.delete(
      '/stores/:id/customers/:customer_id',
      declareRoute({
        operationId: 'deleteStoreCustomer',
        summary: "Delete a store's customer",
        description:
          "Erases the account as the customer's own deletion does, in one transaction: sessions, codes, passkeys, provider links, messages; the audit trail keeps the id without the identity; an `account_deleted` notice goes to the identity. The identity is free at once. Recorded as `account.deleted` with the token's id; raises `customer.deleted`.",
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found'],
        answer: DeletedCustomer,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const id = request.params.customer_id;
        // An unknown id is `gone`: the erasure locks the row it erases.
        const result = await eraseAccount(authDeps(services, store), store, id);
        if (!result.ok) throw notFound();
        audit(request, store.id, 'account.deleted', {}, id);
        return reply.code(202).send({ id, status: 'deleted' as const });
      },
    );
  };
}
