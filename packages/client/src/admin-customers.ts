/**
 * A store's customers as the platform's staff manage them through the admin listener: find, read,
 * create, change, block, require a reset, sign out, delete. Part of the admin client
 * (`@storefront-auth/client/admin`), which re-exports these types.
 */
import type { Customer } from './api-types.js';

export type CustomerStatus = 'active' | 'unverified' | 'blocked';

/** A customer in a list: who they are and where their account stands. */
export interface ListedCustomer extends Customer {
  /** `blocked` while a block holds, else whether the identity is proven. */
  status: CustomerStatus;
  /** The language of the customer's messages; null: the store's default. */
  locale: string | null;
  external_id: string | null;
  created_at: string;
  /** The block that holds now; null when none does. `until` null: until lifted. */
  block: { reason: string; blocked_at: string; until: string | null } | null;
}

/** One customer with what support asks about. */
export interface StaffCustomer extends ListedCustomer {
  /** The last sign-in the audit trail still remembers (its retention). */
  last_sign_in_at: string | null;
  session_count: number;
  passkey_count: number;
  /** A second step (TOTP) is on. */
  two_factor: boolean;
  providers: { provider: string; email: string | null; linked_at: string }[];
}

export interface CustomerList {
  customers: ListedCustomer[];
  /** Pass as `cursor` (with the same `query` and `status`) for the next page; null on the last. */
  next_cursor: string | null;
}

export interface CustomerSearch {
  /** The start of the email, phone or name. */
  query?: string;
  status?: CustomerStatus;
  cursor?: string;
  limit?: number;
}

export interface NewCustomer {
  /** An email or phone number, as the store signs in. */
  identity: string;
  name: string;
  /** The staff's word that the customer controls the identity. */
  verified?: boolean;
  /** A hash in a format an import takes; none: no password. */
  password_hash?: string;
  /** Without a password hash: send a set-password code that lives a week. */
  invite?: boolean;
  locale?: string;
  external_id?: string;
}

/** A merge patch; a new `email` or `phone` is proven as `verified` says. */
export interface CustomerPatch {
  name?: string;
  email?: string;
  phone?: string;
  verified?: boolean;
  locale?: string | null;
  external_id?: string | null;
}

export interface CustomerAdmin {
  /** A page of the store's customers, matching `query` by the start of identity or name. */
  listCustomers(store: string, search?: CustomerSearch): Promise<CustomerList>;
  /** The customer holding exactly this identity (normalized as at sign-in), or null. */
  findCustomer(store: string, identity: string): Promise<ListedCustomer | null>;
  getCustomer(store: string, customerId: string): Promise<StaffCustomer>;
  /** Give an `idempotencyKey` whenever the call may be retried. */
  createCustomer(store: string, customer: NewCustomer, options?: { idempotencyKey?: string }): Promise<StaffCustomer>;
  changeCustomer(store: string, customerId: string, patch: CustomerPatch): Promise<StaffCustomer>;
  /** Ends every session; no sign-in opens one while the block holds. `until`: an ISO 8601 date and time. */
  blockCustomer(store: string, customerId: string, block: { reason: string; until?: string }): Promise<StaffCustomer>;
  unblockCustomer(store: string, customerId: string): Promise<StaffCustomer>;
  /** The password stops signing in, sessions end, and a reset code is sent. */
  requirePasswordReset(store: string, customerId: string): Promise<StaffCustomer>;
  /** Removes the customer's second step (a lost app and lost recovery codes); they get a notice. */
  removeTwoFactor(store: string, customerId: string): Promise<StaffCustomer>;
  /** Ends every session of the customer; the number ended. */
  revokeCustomerSessions(store: string, customerId: string): Promise<number>;
  deleteCustomer(store: string, customerId: string): Promise<void>;
}

type Call = <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<T>;

export function customerAdmin(call: Call): CustomerAdmin {
  const part = encodeURIComponent;
  const customers = (store: string) => `/stores/${part(store)}/customers`;
  const one = (store: string, id: string) => `${customers(store)}/${part(id)}`;
  const list = (store: string, query: Record<string, string>) =>
    call<CustomerList>('GET', `${customers(store)}?${new URLSearchParams(query).toString()}`);
  return {
    listCustomers: (store, { query, status, cursor, limit } = {}) =>
      list(store, {
        ...(query !== undefined && { query }),
        ...(status !== undefined && { status }),
        ...(cursor !== undefined && { cursor }),
        ...(limit !== undefined && { limit: String(limit) }),
      }),
    findCustomer: async (store, identity) => (await list(store, { identity })).customers[0] ?? null,
    getCustomer: (store, id) => call('GET', one(store, id)),
    createCustomer: (store, customer, { idempotencyKey } = {}) =>
      call(
        'POST',
        customers(store),
        customer,
        idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
      ),
    changeCustomer: (store, id, patch) => call('PATCH', one(store, id), patch),
    blockCustomer: (store, id, block) => call('POST', `${one(store, id)}/block`, block),
    unblockCustomer: (store, id) => call('POST', `${one(store, id)}/unblock`),
    requirePasswordReset: (store, id) => call('POST', `${one(store, id)}/require-password-reset`),
    removeTwoFactor: (store, id) => call('POST', `${one(store, id)}/remove-two-factor`),
    revokeCustomerSessions: async (store, id) =>
      (await call<{ count: number }>('POST', `${one(store, id)}/revoke-sessions`)).count,
    deleteCustomer: async (store, id) => {
      await call('DELETE', one(store, id));
    },
  };
}
