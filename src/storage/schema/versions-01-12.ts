import type { Migration } from './migration.js';

/** Migrations 1 to 12. Append only: a migration that has run anywhere is never edited. */
export const versions1To12: Migration[] = [
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
];
