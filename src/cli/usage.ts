/** What `storefront-auth --help` prints: every command and its flags. */
export const usage = `Usage: storefront-auth <command>

  serve                                   run the service
  migrate                                 apply database migrations
  store list                              every store, by slug
  store create --slug S --name N [--host H]... [--identity-mode email|phone]
            [--verification-required true|false] [any setting of store set]
                                          make a store (slug: 3 to 63 of a-z, 0-9 and -)
  store show [--store S]                  print a store
  store set [--store S] [--name N] [--identity-mode email|phone] [--verification-required true|false]
            [--sign-in-with-code true|false] [--sign-in-notices true|false]
            [--passkeys true|false] [--two-factor off|optional|required]
            [--status active|paused|closed] [--force]
            [--allowed-origin O]... [--mail-from "Name <address>"] [--sms-sender LABEL]
            [--webauthn-rp-id HOST] [--cookie-domain DOMAIN] [--languages en,ar]
            [--default-language en] [--phone-countries DE,AT]
            [--logo-url URL] [--primary-colour #RRGGBB] [--accent-colour #RRGGBB] [--support-url URL]
                                          --allowed-origin replaces the list; an empty value
                                          clears --allowed-origin, --mail-from, --sms-sender,
                                          --webauthn-rp-id, --cookie-domain and each branding flag
                                          (the service's own look); --languages replaces the list
                                          and must keep the default unless --default-language
                                          names a new one (on create: the first language);
                                          --phone-countries: the only countries a phone store's
                                          numbers may be in (an empty value: any)
  store set [--store S] --bot-check turnstile|hcaptcha|recaptcha --bot-check-site-key K
            --bot-check-secret-file FILE --bot-check-on register,forgot,resend,code_request,identity_change
            [--bot-check-verify-url URL]  | --bot-check off
                                          a bot check on those operations (the secret is stored sealed)
  store hosts add [--store S] <host>      let the store answer on a host (no port, no wildcard)
  store hosts remove [--store S] [--force] <host>
                                          --force: even when it is the last host on the relying
                                          party ID of the store's passkeys (they stop working)
  store providers add [--store S] --id ID (--preset google|apple|microsoft | --issuer URL)
            --client-id C (--client-secret X | --client-secret-file FILE
            | --private-key FILE --key-id K --team-id T)
            [--name N] [--scopes "openid email profile"]
                                          add a sign-in provider (or replace the one of that id);
                                          the secret (or Apple's .p8 key) is stored sealed
  store providers remove [--store S] --id ID
  store providers list [--store S]        the store's providers, without their secrets
  store delete --store S --confirm S      delete a store (--confirm repeats its slug): its slug and
                                          hosts are free at once, what it held is erased in the
                                          background by the running service
  webhooks add [--store S] --url U --events E,E|* [--description D]
                                          add a webhook endpoint: the store's events of those types
                                          (* for every type but customer.signed_in) are POSTed to U,
                                          signed; prints it with its secret, shown this once
  webhooks list [--store S]               the store's webhook endpoints, without their secrets
  webhooks remove [--store S] --id ID     remove an endpoint, and its deliveries with it
  customer show <identity>                print a customer
  customer delete <identity> --yes        delete a customer and their data, as they can themselves
  customer sessions <identity>            a customer's live sessions, newest first
  customer revoke-sessions <identity>     sign a customer out everywhere (audited)
  customer block <identity> --reason R [--until T]
                                          block a customer: sessions end, no sign-in opens one
                                          until T (an ISO 8601 date and time) or unblock (audited)
  customer unblock <identity>             lift a customer's block (audited)
  customer passkeys <identity>            a customer's passkeys, newest first
  customer remove-passkey <identity> <id> remove one of a customer's passkeys (audited)
  customers import [--store S] [--dry-run] <file>
                                          import customers from an NDJSON file (the admin API's
                                          import format); exits 1 naming <file>.refused when a
                                          line was refused; --dry-run checks and writes nothing
  customers export [--store S] [<file>]   every customer of the store as NDJSON, to the file or
                                          standard output
  outbox list [--status pending|sent|failed|dropped]
  outbox retry <id>                       send a failed message again
  audit [--customer <identity>] [--event <event>] [--limit N]
                                          security events, newest first (default 100)
  prune                                   delete what has outlived its retention now, in every store
  import <folder>                         copy the rows of an earlier version's PGlite folder
                                          (DATA_DIR/pgdata) into the first store, without customers
  backup <file>                           save every table, read in one snapshot, into a gzip file
                                          (also while the service runs); written under a temporary
                                          name and renamed when complete
  breached load <file>                    load breached-password SHA-1s (HEX40:COUNT lines, the Pwned
                                          Passwords download or part of it) as the local copy new
                                          passwords are checked against; run again to resume
  restore [--force] <file>                load a backup into an empty database (a fresh DATA_DIR),
                                          in one transaction; --force replaces what it holds

  --store S names a store by slug (or id). The commands about one store (store show, set, hosts,
  providers, delete, webhooks, customer, customers, outbox, audit) act on the only store without
  it; with several stores they need it.

Configuration comes from the environment (docs/guides/production.md#configuration).`;
