import type { Migration } from './migration.js';

/** Migrations 13 to 18. Append only: a migration that has run anywhere is never edited. */
export const versions13To18: Migration[] = [
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
];
