import type { Database, Queryable } from './database.js';

interface Migration {
  version: number;
  name: string;
  sql: string;
}

// Append only: a migration that has run anywhere is never edited.
export const migrations: Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
      CREATE TABLE store (
        id text PRIMARY KEY,
        name text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'paused', 'closed')),
        identity_mode text NOT NULL CHECK (identity_mode IN ('email', 'phone')),
        settings jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );

      CREATE TABLE customers (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        identity_type text NOT NULL CHECK (identity_type IN ('email', 'phone')),
        identity_value text NOT NULL,
        password_hash text NOT NULL,
        verified_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        UNIQUE (identity_type, identity_value)
      );

      -- Codes are kept only as an HMAC; attempts are counted before any comparison.
      CREATE TABLE challenges (
        id uuid PRIMARY KEY,
        customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
        purpose text NOT NULL CHECK (purpose IN ('verification', 'password_reset')),
        code_mac text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        consumed_at timestamptz,
        voided_at timestamptz
      );
      CREATE INDEX challenges_live ON challenges (customer_id, purpose, created_at)
        WHERE consumed_at IS NULL AND voided_at IS NULL;

      -- Only the SHA-256 of a session id is stored: a leaked table opens no session.
      CREATE TABLE sessions (
        id_hash text PRIMARY KEY,
        customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX sessions_customer ON sessions (customer_id);

      -- Message bodies are sealed (AES-GCM) because they hold codes; they are erased once sent.
      CREATE TABLE outbox (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        channel text NOT NULL CHECK (channel IN ('email', 'sms')),
        purpose text NOT NULL,
        recipient text NOT NULL,
        sealed_body text,
        challenge_id uuid REFERENCES challenges (id) ON DELETE SET NULL,
        status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'dropped')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL,
        -- Retries stop one delivery window after this (the enqueue, or an operator's retry).
        window_started_at timestamptz NOT NULL,
        locked_until timestamptz,
        last_error text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        sent_at timestamptz
      );
      CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
      CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
    `,
  },
  {
    version: 2,
    name: 'audit_events',
    sql: `
      -- Security events. No foreign key: the trail outlives the customers it mentions.
      -- Never holds a secret: no password, code, session id or attempted identity.
      CREATE TABLE audit_events (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        occurred_at timestamptz NOT NULL,
        event text NOT NULL,
        customer_id uuid,
        client_address text,
        request_id text,
        details jsonb NOT NULL DEFAULT '{}'
      );
      CREATE INDEX audit_events_customer ON audit_events (customer_id, occurred_at);
      CREATE INDEX audit_events_time ON audit_events (occurred_at);
    `,
  },
  {
    version: 3,
    name: 'retention_indexes',
    sql: `
      -- The janitor selects each batch of dead rows through one of these, so a pass reads only
      -- what it deletes. Audit events use audit_events_time.
      CREATE INDEX sessions_expires ON sessions (expires_at);
      CREATE INDEX sessions_last_seen ON sessions (last_seen_at);
      -- A code ends at the first of its expiry, its use and its replacement.
      CREATE INDEX challenges_finished ON challenges ((LEAST(expires_at, consumed_at, voided_at)));
      -- Deleting a code sets outbox.challenge_id to NULL; without this each deleted code scans the outbox.
      CREATE INDEX outbox_challenge ON outbox (challenge_id);
      CREATE INDEX outbox_finished ON outbox (status, updated_at) WHERE status <> 'pending';
    `,
  },
  {
    version: 4,
    name: 'credential_version',
    sql: `
      -- Raised by every change of password. A login opens its session only if the version it
      -- checked the password against is still current, so no login racing a reset outlives it.
      ALTER TABLE customers ADD COLUMN credential_version integer NOT NULL DEFAULT 1;
    `,
  },
  {
    version: 5,
    name: 'session_handles',
    sql: `
      -- A public handle for each session, random and stored: the account area names sessions by it,
      -- and it reveals nothing of the cookie. The default gives every existing session its own.
      ALTER TABLE sessions ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
      CREATE UNIQUE INDEX sessions_public_id ON sessions (public_id);
      -- What the browser sent at login (cut to 256 characters) and the login address masked to its
      -- /24 or /48: enough to recognise a device, never the full address.
      ALTER TABLE sessions ADD COLUMN user_agent text;
      ALTER TABLE sessions ADD COLUMN client_address text;
      -- Listing a customer's sessions newest first reads only theirs, already in order.
      DROP INDEX sessions_customer;
      CREATE INDEX sessions_customer_created ON sessions (customer_id, created_at);
    `,
  },
  {
    version: 6,
    name: 'sign_in_codes',
    sql: `
      -- A code can also sign a customer in, where the store allows it. The constraint keeps its
      -- name, so the allowed purposes stay in one CHECK that later migrations can replace the same way.
      ALTER TABLE challenges DROP CONSTRAINT challenges_purpose_check;
      ALTER TABLE challenges ADD CONSTRAINT challenges_purpose_check
        CHECK (purpose IN ('verification', 'password_reset', 'sign_in'));
    `,
  },
  {
    version: 8,
    name: 'known_devices',
    sql: `
      -- The devices each customer signed in from: a browser-and-system family and the masked
      -- address, never the full user-agent or address. Sessions end at logout, so this is what
      -- remembers a device for the 90 days a new sign-in notice looks back; the janitor prunes
      -- older rows, and the customer's deletion takes theirs.
      CREATE TABLE known_devices (
        customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
        family text NOT NULL,
        masked_address text NOT NULL,
        last_seen_at timestamptz NOT NULL,
        PRIMARY KEY (customer_id, family, masked_address)
      );
      CREATE INDEX known_devices_last_seen ON known_devices (last_seen_at);
    `,
  },
  {
    version: 9,
    name: 'identity_change_codes',
    sql: `
      -- A code may confirm a change of email or phone. The whole list is restated, so the check is
      -- the same whichever other migration that widens it ran first.
      ALTER TABLE challenges DROP CONSTRAINT IF EXISTS challenges_purpose_check;
      ALTER TABLE challenges ADD CONSTRAINT challenges_purpose_check
        CHECK (purpose IN ('verification', 'password_reset', 'sign_in', 'identity_change'));
      -- The identity a change code would switch to, normalized; null for every other purpose.
      ALTER TABLE challenges ADD COLUMN new_identity_value text;
    `,
  },
  {
    version: 10,
    name: 'outbox_customer',
    sql: `
      -- The customer a message is about, whichever address it went to, so deleting the account
      -- erases them all: a change code sent to an identity being moved to, a notice sent to one
      -- left behind. SET NULL rather than CASCADE: the deletion drops or strips these rows itself,
      -- and the last message, the notice of the deletion, is queued after the customer row is gone.
      ALTER TABLE outbox ADD COLUMN customer_id uuid REFERENCES customers (id) ON DELETE SET NULL;
      CREATE INDEX outbox_customer ON outbox (customer_id) WHERE customer_id IS NOT NULL;
      -- Messages queued before this column: a code's message belongs to its code's customer, any
      -- other to the account whose address it went to. What is left is a notice to an identity its
      -- customer has since left; the deletion cannot find it, and the janitor deletes it when the
      -- outbox retention ends, as it did before.
      UPDATE outbox o SET customer_id = ch.customer_id FROM challenges ch WHERE o.challenge_id = ch.id;
      UPDATE outbox o SET customer_id = c.id FROM customers c
       WHERE o.customer_id IS NULL AND o.recipient = c.identity_value
         AND o.channel = CASE c.identity_type WHEN 'email' THEN 'email' ELSE 'sms' END;
      `,
  },
  {
    version: 11,
    name: 'passkeys',
    sql: `
      -- WebAuthn credentials: only the public key and what verifying an assertion needs. public_id
      -- is the handle the account area names a passkey by; the credential id stays server-side.
      CREATE TABLE passkeys (
        public_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
        credential_id text NOT NULL UNIQUE,
        public_key bytea NOT NULL,
        counter bigint NOT NULL,
        transports text[] NOT NULL DEFAULT '{}',
        name text NOT NULL,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz
      );
      CREATE INDEX passkeys_customer_created ON passkeys (customer_id, created_at);

      -- A ceremony's challenge, keyed by the SHA-256 of the random handle in the asking browser's
      -- cookie, so only that browser can spend it; spent by one DELETE ... RETURNING.
      CREATE TABLE passkey_challenges (
        handle_hash text PRIMARY KEY,
        purpose text NOT NULL CHECK (purpose IN ('register', 'login')),
        customer_id uuid REFERENCES customers (id) ON DELETE CASCADE,
        challenge text NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX passkey_challenges_expires ON passkey_challenges (expires_at);
    `,
  },
  {
    version: 12,
    name: 'proof of control',
    sql: `
      -- An account whose identity is unproven is only a claim: whoever registered it may not own
      -- the address, and a passkey they added would outlive the owner's reset. Such passkeys are
      -- removed; the owner adds them again once the identity is proven (verify, reset, code).
      DELETE FROM passkeys p USING customers c WHERE p.customer_id = c.id AND c.verified_at IS NULL;
      -- A proof of control that sets no password (a sign-in code) retires the one set before it.
      ALTER TABLE customers ALTER COLUMN password_hash DROP NOT NULL;
    `,
  },
  {
    version: 13,
    name: 'many stores',
    sql: `
      -- One deployment serves many stores. The row the single store had keeps its id ('default')
      -- and becomes the first store; every other table says which store each row belongs to.
      ALTER TABLE store RENAME TO stores;
      ALTER INDEX store_pkey RENAME TO stores_pkey;
      ALTER TABLE stores RENAME CONSTRAINT store_status_check TO stores_status_check;
      ALTER TABLE stores RENAME CONSTRAINT store_identity_mode_check TO stores_identity_mode_check;
      ALTER TABLE stores ADD COLUMN slug text;
      UPDATE stores SET slug = id;
      ALTER TABLE stores ALTER COLUMN slug SET NOT NULL;
      ALTER TABLE stores ADD CONSTRAINT stores_slug_format CHECK (slug ~ '^[a-z0-9-]{3,63}$');
      -- Empty: the storefronts at https:// and each of the store's hosts.
      ALTER TABLE stores ADD COLUMN allowed_origins text[] NOT NULL DEFAULT '{}';
      ALTER TABLE stores ADD COLUMN mail_from text;
      ALTER TABLE stores ADD COLUMN sms_sender text;
      ALTER TABLE stores ADD COLUMN webauthn_rp_id text;
      -- A deleted store stays, without hosts, until the janitor has erased what it held.
      ALTER TABLE stores ADD COLUMN deleted_at timestamptz;
      -- The change feed: every change takes the next version, under a lock that makes versions
      -- commit in order, so an instance that has read up to version n has missed nothing below it.
      CREATE SEQUENCE store_versions;
      ALTER TABLE stores ADD COLUMN version bigint NOT NULL DEFAULT nextval('store_versions');
      ALTER SEQUENCE store_versions OWNED BY stores.version;
      CREATE UNIQUE INDEX stores_slug ON stores (slug) WHERE deleted_at IS NULL;
      CREATE INDEX stores_version ON stores (version);
      -- Host names unique across the deployment: the directory a request's Host is resolved by.
      CREATE TABLE store_hosts (
        host text PRIMARY KEY,
        store_id text NOT NULL REFERENCES stores (id) ON DELETE CASCADE
      );
      CREATE INDEX store_hosts_store ON store_hosts (store_id);

      -- A database with customers always has its store row (the service makes it at its first start);
      -- should one lack it, the row is made here, so the keys below have a store to point at.
      INSERT INTO stores (id, slug, name, status, identity_mode, created_at, updated_at)
      SELECT 'default', 'default', 'My Store', 'active', c.identity_type, now(), now()
        FROM (SELECT identity_type FROM customers LIMIT 1) c
       WHERE NOT EXISTS (SELECT 1 FROM stores);

      -- Rows made before: all of the one store. Adding a column with a constant default rewrites
      -- nothing; the default is dropped at once, so no statement can forget to name a store.
      ALTER TABLE customers ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE challenges ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE sessions ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE outbox ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE audit_events ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE known_devices ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE passkeys ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE passkey_challenges ADD COLUMN store_id text NOT NULL DEFAULT 'default';
      ALTER TABLE customers ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE challenges ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE sessions ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE outbox ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE audit_events ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE known_devices ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE passkeys ALTER COLUMN store_id DROP DEFAULT;
      ALTER TABLE passkey_challenges ALTER COLUMN store_id DROP DEFAULT;

      -- Every key leads with the store, so the tables can be distributed by store_id (Citus) and
      -- a row of one store can only ever point at a row of the same store.
      ALTER TABLE challenges DROP CONSTRAINT challenges_customer_id_fkey;
      ALTER TABLE sessions DROP CONSTRAINT sessions_customer_id_fkey;
      ALTER TABLE outbox DROP CONSTRAINT outbox_customer_id_fkey, DROP CONSTRAINT outbox_challenge_id_fkey;
      ALTER TABLE known_devices DROP CONSTRAINT known_devices_customer_id_fkey;
      ALTER TABLE passkeys DROP CONSTRAINT passkeys_customer_id_fkey;
      ALTER TABLE passkey_challenges DROP CONSTRAINT passkey_challenges_customer_id_fkey;

      ALTER TABLE customers DROP CONSTRAINT customers_pkey, ADD PRIMARY KEY (store_id, id),
        DROP CONSTRAINT customers_identity_type_identity_value_key,
        ADD CONSTRAINT customers_identity UNIQUE (store_id, identity_type, identity_value),
        ADD CONSTRAINT customers_store FOREIGN KEY (store_id) REFERENCES stores (id);

      ALTER TABLE challenges DROP CONSTRAINT challenges_pkey, ADD PRIMARY KEY (store_id, id),
        ADD CONSTRAINT challenges_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE CASCADE;
      DROP INDEX challenges_live;
      CREATE INDEX challenges_live ON challenges (store_id, customer_id, purpose, created_at)
        WHERE consumed_at IS NULL AND voided_at IS NULL;

      ALTER TABLE sessions DROP CONSTRAINT sessions_pkey, ADD PRIMARY KEY (store_id, id_hash),
        ADD CONSTRAINT sessions_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE CASCADE;
      DROP INDEX sessions_public_id;
      CREATE UNIQUE INDEX sessions_public_id ON sessions (store_id, public_id);
      DROP INDEX sessions_customer_created;
      CREATE INDEX sessions_customer_created ON sessions (store_id, customer_id, created_at);

      ALTER TABLE outbox DROP CONSTRAINT outbox_pkey, ADD PRIMARY KEY (store_id, id),
        ADD CONSTRAINT outbox_store FOREIGN KEY (store_id) REFERENCES stores (id),
        ADD CONSTRAINT outbox_challenge FOREIGN KEY (store_id, challenge_id)
          REFERENCES challenges (store_id, id) ON DELETE SET NULL (challenge_id),
        ADD CONSTRAINT outbox_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE SET NULL (customer_id);
      DROP INDEX outbox_challenge;
      CREATE INDEX outbox_challenge ON outbox (store_id, challenge_id);
      DROP INDEX outbox_customer;
      CREATE INDEX outbox_customer ON outbox (store_id, customer_id) WHERE customer_id IS NOT NULL;

      ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey, ADD PRIMARY KEY (store_id, id),
        ADD CONSTRAINT audit_events_store FOREIGN KEY (store_id) REFERENCES stores (id);
      DROP INDEX audit_events_customer;
      CREATE INDEX audit_events_customer ON audit_events (store_id, customer_id, occurred_at);

      ALTER TABLE known_devices DROP CONSTRAINT known_devices_pkey,
        ADD PRIMARY KEY (store_id, customer_id, family, masked_address),
        ADD CONSTRAINT known_devices_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE CASCADE;

      ALTER TABLE passkeys DROP CONSTRAINT passkeys_pkey, ADD PRIMARY KEY (store_id, public_id),
        DROP CONSTRAINT passkeys_credential_id_key,
        ADD CONSTRAINT passkeys_credential UNIQUE (store_id, credential_id),
        ADD CONSTRAINT passkeys_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE CASCADE;
      DROP INDEX passkeys_customer_created;
      CREATE INDEX passkeys_customer_created ON passkeys (store_id, customer_id, created_at);

      ALTER TABLE passkey_challenges DROP CONSTRAINT passkey_challenges_pkey, ADD PRIMARY KEY (store_id, handle_hash),
        ADD CONSTRAINT passkey_challenges_store FOREIGN KEY (store_id) REFERENCES stores (id),
        ADD CONSTRAINT passkey_challenges_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE CASCADE;
    `,
  },
  {
    version: 14,
    name: 'idempotency keys',
    sql: `
      -- The first answer to an admin call sent with an Idempotency-Key, kept 24 hours so that a
      -- retry gets it again instead of doing the work twice. The deployment's, not a store's: the
      -- call that creates a store comes before the store.
      CREATE TABLE idempotency_keys (
        key text PRIMARY KEY,
        request_hash text NOT NULL,
        status integer NOT NULL,
        answer jsonb NOT NULL,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
    `,
  },
  {
    version: 15,
    name: 'sign-in providers',
    sql: `
      -- A store's OpenID Connect providers. The client secret (or, for Apple, the private key the
      -- secret is made from) is sealed with a key derived from APP_SECRET: a dump does not give it.
      CREATE TABLE store_providers (
        store_id text NOT NULL REFERENCES stores (id),
        id text NOT NULL,
        name text NOT NULL,
        preset text,
        issuer text NOT NULL,
        client_id text NOT NULL,
        sealed_secret text NOT NULL,
        key_id text,
        team_id text,
        scopes text NOT NULL,
        response_mode text NOT NULL CHECK (response_mode IN ('query', 'form_post')),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, id)
      );

      -- Who a provider says a customer is: its issuer and subject, never the email alone. A link
      -- outlives its provider's removal (adding it back restores the way in); it goes with the account.
      CREATE TABLE provider_links (
        store_id text NOT NULL,
        issuer text NOT NULL,
        subject text NOT NULL,
        customer_id uuid NOT NULL,
        provider_id text NOT NULL,
        email text,
        linked_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, issuer, subject),
        CONSTRAINT provider_links_customer FOREIGN KEY (store_id, customer_id)
          REFERENCES customers (store_id, id) ON DELETE CASCADE
      );
      CREATE INDEX provider_links_customer ON provider_links (store_id, customer_id);

      -- The states of provider sign-ins that came back, kept until they would have expired anyway:
      -- a callback replayed with the same cookie and state finds its state here and is refused.
      CREATE TABLE provider_states (
        store_id text NOT NULL REFERENCES stores (id),
        state_hash text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (store_id, state_hash)
      );
      CREATE INDEX provider_states_expires ON provider_states (expires_at);
    `,
  },
  {
    version: 16,
    name: 'languages',
    sql: `
      -- The language a customer's messages are written in, recorded at registration and changeable
      -- in the profile; null: the store's default language. A store's languages sit in its settings.
      ALTER TABLE customers ADD COLUMN locale text;
    `,
  },
  {
    version: 17,
    name: 'relying party and cookie domain per store',
    sql: `
      -- A store's passkeys are bound to its relying party ID, which used to follow its first host
      -- in name order: adding a host could move it. It is kept from now on, as it stands today.
      UPDATE stores s SET webauthn_rp_id = (SELECT min(h.host) FROM store_hosts h WHERE h.store_id = s.id)
       WHERE s.webauthn_rp_id IS NULL AND EXISTS (SELECT 1 FROM store_hosts h WHERE h.store_id = s.id);
      -- The parent domain a store's session and XSRF-TOKEN cookies are set for; null: host-only.
      ALTER TABLE stores ADD COLUMN cookie_domain text;
    `,
  },
  {
    version: 18,
    name: 'customer imports',
    sql: `
      -- Customers brought from another system keep their id there (the export writes it back).
      ALTER TABLE customers ADD COLUMN external_id text;
      -- An import's report while it runs and after: its counts and the first refusals (line,
      -- field and reason; never a value from the file). updated_at moves with every batch, so a
      -- report that stopped moving is an import its process did not live to finish.
      CREATE TABLE customer_imports (
        store_id text NOT NULL REFERENCES stores (id),
        id uuid PRIMARY KEY,
        status text NOT NULL CHECK (status IN ('running', 'done', 'failed')),
        dry_run boolean NOT NULL,
        lines integer NOT NULL DEFAULT 0,
        created integer NOT NULL DEFAULT 0,
        updated integer NOT NULL DEFAULT 0,
        unchanged integer NOT NULL DEFAULT 0,
        refused integer NOT NULL DEFAULT 0,
        refusals jsonb NOT NULL DEFAULT '[]',
        error text,
        started_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        finished_at timestamptz
      );
      CREATE INDEX customer_imports_store ON customer_imports (store_id, started_at);
      -- One import of a store at a time: two would lock the same customers in different orders.
      CREATE UNIQUE INDEX customer_imports_running ON customer_imports (store_id) WHERE status = 'running';
    `,
  },
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

// Any constant works; it only has to be the same for every instance of the service.
export const migrationLockKey = 727_274_001;

/**
 * Applies every migration not yet applied, all in one transaction. The advisory lock makes
 * concurrent starts of several instances take turns instead of racing on the same DDL. It is the
 * transaction-scoped kind, released by COMMIT or ROLLBACK: behind a pooler in transaction mode a
 * session-level lock would stay with whichever server connection ran it, held for nobody.
 */
export async function migrate(db: Database): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey]);
    return applyMigrations(tx);
  });
}

/**
 * Applies, in the caller's transaction (which holds the migration lock), every migration not yet
 * applied up to `upTo`: a restore builds the schema its rows were saved from, then runs the rest.
 */
export async function applyMigrations(tx: Queryable, upTo = Infinity): Promise<number[]> {
  await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((row) => row.version));
  const ran: number[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.version) || migration.version > upTo) continue;
    await tx.exec(migration.sql);
    await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
      migration.version,
      migration.name,
    ]);
    ran.push(migration.version);
  }
  return ran;
}
