import type { Migration } from './migration.js';

/**
 * Migrations from 19 on: new ones are appended here. Append only: a migration that has run anywhere
 * is never edited.
 */
export const versions19On: Migration[] = [
  {
    version: 19,
    name: 'invitations and the password migration hook',
    sql: `
      -- When an import made the account: only such an account, while it has no password, may have
      -- its password checked by the store's old system (the password migration hook).
      ALTER TABLE customers ADD COLUMN imported_at timestamptz;
      ALTER TABLE customer_imports ADD COLUMN invited integer NOT NULL DEFAULT 0;
      -- The store's old system, asked about a password its import brought no hash for. The secret
      -- is sealed under APP_SECRET, as providers' secrets are.
      CREATE TABLE store_password_hooks (
        store_id text PRIMARY KEY REFERENCES stores (id),
        url text NOT NULL,
        sealed_secret text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
    `,
  },
  {
    version: 20,
    name: 'webhooks',
    sql: `
      -- A store's own systems, told about its customers (Standard Webhooks). The secrets are sealed
      -- under APP_SECRET; after a rotation the previous one signs beside the new one until it ends.
      -- failing_since: when the endpoint's current run of failures began (null: its last answer was 2xx).
      CREATE TABLE webhook_endpoints (
        store_id text NOT NULL REFERENCES stores (id),
        id uuid NOT NULL,
        url text NOT NULL,
        events text[] NOT NULL,
        description text NOT NULL DEFAULT '',
        sealed_secret text NOT NULL,
        sealed_previous_secret text,
        previous_secret_until timestamptz,
        failing_since timestamptz,
        disabled_at timestamptz,
        disabled_reason text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, id)
      );
      -- An event as it is sent, written in the transaction of the change it reports. Its body is
      -- kept byte for byte, so every retry carries the same signature input; erasing a customer
      -- empties the bodies that no longer have to be sent (body null).
      CREATE TABLE webhook_events (
        store_id text NOT NULL REFERENCES stores (id),
        id text NOT NULL,
        type text NOT NULL,
        customer_id uuid,
        body text,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, id)
      );
      CREATE INDEX webhook_events_customer ON webhook_events (store_id, customer_id) WHERE customer_id IS NOT NULL;
      CREATE INDEX webhook_events_created ON webhook_events (created_at);
      -- One event to one endpoint. id orders a customer's events for each endpoint; customer_id is
      -- kept after the customer is gone (their customer.deleted still has to be sent in order).
      CREATE TABLE webhook_deliveries (
        store_id text NOT NULL,
        id bigserial NOT NULL,
        endpoint_id uuid NOT NULL,
        event_id text NOT NULL,
        customer_id uuid,
        status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        attempt_log jsonb NOT NULL DEFAULT '[]',
        next_attempt_at timestamptz NOT NULL,
        locked_until timestamptz,
        last_status integer,
        last_error text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        delivered_at timestamptz,
        PRIMARY KEY (store_id, id),
        FOREIGN KEY (store_id, endpoint_id) REFERENCES webhook_endpoints (store_id, id) ON DELETE CASCADE,
        FOREIGN KEY (store_id, event_id) REFERENCES webhook_events (store_id, id) ON DELETE CASCADE
      );
      -- Each endpoint's lane: its pending deliveries in order, and those of one customer.
      CREATE INDEX webhook_deliveries_lane ON webhook_deliveries (endpoint_id, id) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, customer_id, id) WHERE status = 'pending';
      -- Deliveries in flight (leased), counted per endpoint at every claim.
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id) WHERE locked_until IS NOT NULL;
      CREATE INDEX webhook_deliveries_listing ON webhook_deliveries (store_id, endpoint_id, id);
      CREATE INDEX webhook_deliveries_event ON webhook_deliveries (store_id, event_id);
    `,
  },
  {
    version: 21,
    name: 'customers for staff',
    sql: `
      -- A block by the platform's staff: while it holds (no end, or an end ahead) no session opens.
      ALTER TABLE customers ADD COLUMN blocked_at timestamptz, ADD COLUMN blocked_until timestamptz,
        ADD COLUMN blocked_reason text;
      -- Staff find customers by the start of their identity or name, a page at a time in that
      -- order: byte order (COLLATE "C") serves both the prefix match and the order from one index.
      CREATE INDEX customers_identity_order ON customers (store_id, (identity_value COLLATE "C"), id);
      CREATE INDEX customers_name_order ON customers (store_id, (lower(name) COLLATE "C"), id);
    `,
  },
  {
    version: 22,
    name: 'audit events of a customer by id',
    sql: `
      -- A customer's events are read newest first by id, a page at a time (the admin API's trail,
      -- the data export): by (store_id, customer_id, id) a page reads its own rows only, where
      -- audit_events_customer (store_id, customer_id, occurred_at) reads all of the customer's and
      -- sorts them. That one stays for what reads a customer's events by time.
      CREATE INDEX audit_events_customer_id ON audit_events (store_id, customer_id, id);
    `,
  },
  {
    version: 23,
    name: 'breached password hashes',
    sql: `
      -- The local copy of the breach corpus (storefront-auth breached load): the SHA-1 of each
      -- breached password, 20 bytes, the key itself, so a check is one read of the primary key.
      -- The whole deployment's, like the corpus: it names no store and holds no customer's data.
      CREATE TABLE breached_hashes (
        sha1 bytea PRIMARY KEY CHECK (octet_length(sha1) = 20)
      );
    `,
  },
  {
    version: 24,
    name: 'a second step',
    sql: `
      -- Whether a customer's sign-ins take a second step sits on the customer row, which every
      -- sign-in reads already, so a customer without one costs no extra query.
      ALTER TABLE customers ADD COLUMN two_factor boolean NOT NULL DEFAULT false;

      -- The TOTP secret, sealed (keys.ts); the last step accepted, so none is accepted twice; the
      -- recovery codes as MACs, each removed when used. Unconfirmed until a code from the app.
      CREATE TABLE second_steps (
        store_id text NOT NULL,
        customer_id uuid NOT NULL,
        sealed_secret text NOT NULL,
        confirmed_at timestamptz,
        last_step bigint NOT NULL DEFAULT 0,
        recovery_hashes bytea[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (store_id, customer_id),
        FOREIGN KEY (store_id, customer_id) REFERENCES customers (store_id, id) ON DELETE CASCADE
      );

      -- A sign-in whose first step was right, waiting for its second: keyed by the SHA-256 of the
      -- random handle in the browser's signed cookie, with its wrong tries counted.
      CREATE TABLE pending_sign_ins (
        store_id text NOT NULL,
        handle_hash text NOT NULL,
        customer_id uuid NOT NULL,
        credential_version integer NOT NULL,
        method text NOT NULL CHECK (method IN ('password', 'code', 'provider')),
        failures integer NOT NULL DEFAULT 0,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, handle_hash),
        FOREIGN KEY (store_id, customer_id) REFERENCES customers (store_id, id) ON DELETE CASCADE
      );
      CREATE INDEX pending_sign_ins_expires ON pending_sign_ins (expires_at);
      CREATE INDEX pending_sign_ins_customer ON pending_sign_ins (store_id, customer_id);
    `,
  },
  {
    version: 25,
    name: 'store message templates',
    sql: `
      -- A store's own words for one of its emails in one language (Mustache, checked when saved);
      -- read by its primary key when such a message is queued. They go with their store.
      CREATE TABLE store_templates (
        store_id text NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
        message text NOT NULL,
        language text NOT NULL,
        subject text NOT NULL,
        text_body text NOT NULL,
        html_body text NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, message, language)
      );
    `,
  },
  {
    version: 26,
    name: 'store logos',
    sql: `
      -- A store's uploaded logo (PNG, JPEG or WebP, at most 256 KiB), served at /brand/logo on its
      -- hosts; digest names the version, so a browser may keep it for good.
      CREATE TABLE store_logos (
        store_id text PRIMARY KEY REFERENCES stores (id) ON DELETE CASCADE,
        content_type text NOT NULL,
        image bytea NOT NULL,
        digest text NOT NULL,
        updated_at timestamptz NOT NULL
      );
    `,
  },
];
