import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { exportCustomers } from '../../auth/flows/customer-export.js';
import { reportedImport } from '../../auth/flows/customer-import.js';
import { inviteCustomer } from '../../auth/flows/invitation.js';
import { importLines } from '../../auth/rules/import-line.js';
import { findImport, noImportCounts, recordImport, startImport } from '../../auth/tables/customer-imports.js';
import { forStore } from '../../storage/database.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { authDeps, type AuthDepsSource } from '../core/kit.js';
import { ProblemError } from '../core/problems.js';
import {
  adminCaller,
  adminStoreKit,
  countAdminCalls,
  CustomerParams,
  StoreParams,
  storeProblems,
} from './admin-kit.js';

/**
 * A store's customers in and out, whole: an import of another system's customers (their password
 * hashes included) and the export of this store's, in one NDJSON format. The import is uploaded
 * first, to a file of its own, so its memory does not grow with it, and then runs behind the
 * `202`; its report says how far it got.
 */

/** The most an import file may hold: two million customers of a few hundred bytes each, with room. */
const maxImportBytes = 1024 ** 3;
const ndjson = 'application/x-ndjson';

const ImportQuery = Type.Object({
  dry_run: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], {
      description: '`true`: check and count every line as a real import would, and write no customer.',
    }),
  ),
});
const ImportStarted = Type.Object({
  import_id: Type.String({ format: 'uuid', description: 'Read its report at `GET …/imports/{import_id}`.' }),
});
const Refusal = Type.Object({
  line: Type.Integer({ description: "The line's number in the file, from 1." }),
  field: Type.String({ description: 'The field refused (`line` for a line that is no JSON object).' }),
  reason: Type.String(),
});
const ImportReport = Type.Object({
  id: Type.String({ format: 'uuid' }),
  status: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed')], {
    description: '`failed` also for an import whose process stopped before the end: run it again to finish it.',
  }),
  dry_run: Type.Boolean(),
  lines: Type.Integer({ description: 'Lines read so far (blank lines are skipped).' }),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer(),
  refused: Type.Integer(),
  invited: Type.Integer({ description: 'Invitations queued for lines with `invite: true`.' }),
  refusals: Type.Array(Refusal, { description: 'The first 100 refused lines’ reasons, in line order.' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why a failed import stopped.' }),
  started_at: Type.String({ format: 'date-time' }),
  finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
const Invited = Type.Object({ status: Type.Literal('queued') });
const ImportParams = Type.Object({
  id: StoreParams.properties.id,
  import_id: Type.String({ maxLength: 100 }),
});

/** What authDeps needs, and the admin routes' own store, limiter and audit trail. */
type Deps = AuthDepsSource & Pick<Edge, 'store' | 'limiter' | 'audit'>;

const importDescription = [
  'One customer a line (`Content-Type: application/x-ndjson`), in the format the export writes:',
  '`{"email" | "phone", "name", "verified", "password_hash", "external_id", "created_at", "locale", "providers": [{"issuer", "subject", "email"}]}`;',
  'only the identity is required; `"invite": true` on a line without a hash sends the customer a set-password code (an invitation, valid for a week) when their account has no password and no live reset code. The file is uploaded whole, then imported behind the `202`;',
  'its report is at the `Location` the answer names.',
  'An identity that has an account takes the fields its line gives, so running an import again changes nothing more;',
  'a password the customer set or that a sign-in re-hashed here is never replaced. Password hashes of',
  'bcrypt, phpass, WordPress 6.8, Magento 2, Django, PBKDF2, scrypt and argon2 are kept as given and',
  're-hashed at the first good sign-in. Recorded as `customers.imported` with the token’s id. One import of a store at a time.',
].join(' ');

export function customerTransferRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, limiter, logger } = services;
  const { storeNamed, audit } = adminStoreKit(services);

  return async (app) => {
    countAdminCalls(app, limiter);
    // The upload is read as it arrives, into a file: never whole into memory.
    app.addContentTypeParser(ndjson, (_request, payload, done) => done(null, payload));

    app.post(
      '/stores/:id/customers/import',
      declareRoute({
        operationId: 'importStoreCustomers',
        summary: "Import a store's customers",
        description: importDescription,
        tag: 'customers',
        bearer: adminCaller,
        params: StoreParams,
        query: ImportQuery,
        problems: [...storeProblems, 'import_running', 'payload_too_large', 'unsupported_media_type'],
        answer: ImportStarted,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        if (!(request.body instanceof Readable)) {
          throw new ProblemError('unsupported_media_type', {}, {}, `An import is sent as ${ndjson}.`);
        }
        const deps = authDeps(services, store);
        const importId = randomUUID();
        const dryRun = request.query.dry_run === 'true';
        if (!(await startImport(deps.db, clock, importId, dryRun))) throw new ProblemError('import_running');
        const file = path.join(os.tmpdir(), `storefront-auth-import-${importId}.ndjson`);
        try {
          await spool(request.body, file);
        } catch (error) {
          fs.rmSync(file, { force: true });
          await recordImport(deps.db, clock, importId, noImportCounts(), {
            status: 'failed',
            error: 'the upload did not complete',
          });
          throw error;
        }
        audit(request, store.id, 'customers.imported', { import_id: importId, dry_run: String(dryRun) });
        void reportedImport(deps, store, importId, importLines(fs.createReadStream(file)), { dryRun })
          .catch((error: unknown) =>
            logger.error({ err: error, store: store.slug, importId }, 'customer import failed'),
          )
          .finally(() => fs.rmSync(file, { force: true }));
        reply.code(202).header('location', `/admin/v1/stores/${store.id}/imports/${importId}`);
        return { import_id: importId };
      },
    );

    app.get(
      '/stores/:id/imports/:import_id',
      declareRoute({
        operationId: 'getStoreImport',
        summary: "Read a customer import's report",
        description:
          'Its counts so far (written after every batch of 500 lines) and, once it ended, whether it finished.',
        tag: 'stores',
        bearer: adminCaller,
        params: ImportParams,
        problems: [...storeProblems, 'not_found'],
        answer: ImportReport,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const report = await findImport(forStore(db, store.id), clock, request.params.import_id);
        if (report === null) throw new ProblemError('not_found', {}, {}, 'The store has no import with this id.');
        return report;
      },
    );

    app.post(
      '/stores/:id/customers/:customer_id/invite',
      declareRoute({
        operationId: 'inviteStoreCustomer',
        summary: "Invite a store's customer to set a password",
        description:
          "Sends a customer who has no password (an import brought none) a set-password code, valid for a week, through the outbox under the store's hourly budget; any earlier one stops working. The message tells them where to enter it: the sign-in page's forgot/reset, whose code proves their control of the identity. Recorded as `customer.invited` with the token's id.",
        tag: 'customers',
        bearer: adminCaller,
        params: CustomerParams,
        problems: [...storeProblems, 'not_found', 'has_password'],
        answer: Invited,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const result = await inviteCustomer(authDeps(services, store), store, request.params.customer_id);
        if (!result.ok) {
          if (result.error === 'has_password') throw new ProblemError('has_password');
          throw new ProblemError('not_found', {}, {}, 'No customer of this store has this id.');
        }
        audit(request, store.id, 'customer.invited', {}, result.value.customerId);
        return reply.code(202).send({ status: 'queued' as const });
      },
    );

    app.get(
      '/stores/:id/customers/export',
      declareRoute({
        operationId: 'exportStoreCustomers',
        summary: "Export a store's customers",
        description:
          'Every customer of the store, one a line (`application/x-ndjson`), in the format an import reads: identity, name, `verified`, the password hash (this service’s argon2id in PHC form, or a hash an import brought that no sign-in has replaced yet), `external_id`, `created_at`, `locale` and provider links. Another deployment imports it whole and its customers sign in there with the same passwords. Streamed a page at a time. Recorded as `customers.exported` with the token’s id.',
        tag: 'customers',
        bearer: adminCaller,
        params: StoreParams,
        problems: storeProblems,
        answer: Type.String({ description: 'NDJSON: one customer a line.' }),
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        audit(request, store.id, 'customers.exported', {});
        reply.type(ndjson);
        return reply.send(Readable.from(exportCustomers(forStore(db, store.id))));
      },
    );
  };
}

/** Writes the upload to `file`, refusing it (413) past maxImportBytes. */
async function spool(body: Readable, file: string): Promise<void> {
  let bytes = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (bytes > maxImportBytes)
        callback(new ProblemError('payload_too_large', {}, {}, `An import holds at most ${maxImportBytes} bytes.`));
      else callback(null, chunk);
    },
  });
  await pipeline(body, limit, fs.createWriteStream(file, { mode: 0o600 }));
}
