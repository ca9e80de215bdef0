import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import { baseLanguage } from '../../i18n/strings.js';
import { problemDocument, problemEntry, type AnyProblemCode, type FieldMessage, type ProblemCode } from './problems.js';
import { ReadinessChecks } from './schemas.js';

/** The problem documents an operation can answer, as its OpenAPI responses: one schema and example per status. */

/** What an operation's documentation shows of its own: field errors, and details it words its own way. */
export interface ProblemExamples {
  fieldErrors?: Record<string, FieldMessage[]>;
  details?: Partial<Record<AnyProblemCode, FieldMessage>>;
  /** The admin listener's answers: for operators, always in English. */
  operators?: boolean;
}

function requiredFieldsExample(body: TObject): Record<string, FieldMessage[]> {
  return Object.fromEntries((body.required ?? []).map((field) => [field, [fieldPhrase('required')]]));
}

/**
 * One status's problem document: only the members its codes can carry (`errors` for
 * validation_failed, `checks` and `details` for readiness), and an example made of the first
 * code, so a reader sees the operation's own fields rather than another operation's.
 */
function problemSchema(codes: AnyProblemCode[], own: ProblemExamples): TSchema {
  const [first] = codes as [AnyProblemCode, ...AnyProblemCode[]];
  const carriesErrors = codes.includes('validation_failed');
  const carriesChecks = codes.includes('deployment_not_ready');
  const carriesUntil = codes.includes('account_blocked');
  const example = {
    ...problemDocument(
      first,
      '5f0c6f5e-1f4b-4a59-9a1e-4b8f3c2d7e10',
      baseLanguage,
      own.details?.[first],
      first === 'validation_failed' && own.fieldErrors !== undefined ? { errors: own.fieldErrors } : {},
    ),
    ...(first === 'deployment_not_ready'
      ? { checks: { database: true, cache: false, search: true, store: true } }
      : {}),
  };
  return Type.Object(
    {
      type: Type.String(),
      title: Type.String({ description: own.operators ? 'In English.' : problemLanguageNote }),
      status: Type.Integer(),
      code: Type.Unsafe<AnyProblemCode>({ type: 'string', enum: codes }),
      detail: Type.String({ description: own.operators ? 'In English.' : problemLanguageNote }),
      request_id: Type.String({ description: 'Equals the X-Request-ID header.' }),
      ...(carriesErrors
        ? {
            errors: Type.Optional(
              Type.Record(Type.String(), Type.Array(Type.String()), {
                description:
                  'Every failing field (by its request name, or `body`) with its messages, all in one answer, in the language of `title`.',
              }),
            ),
          }
        : {}),
      ...(carriesUntil
        ? {
            until: Type.Optional(
              Type.String({ format: 'date-time', description: 'When the block ends; absent: until lifted.' }),
            ),
          }
        : {}),
      ...(carriesChecks
        ? {
            checks: Type.Optional(ReadinessChecks),
            details: Type.Optional(Type.Object({ store_id: Type.String(), store_status: Type.String() })),
          }
        : {}),
    },
    { description: 'RFC 9457 problem document', examples: [example] },
  );
}

/** The language a problem is written in: its `code` never changes, its words do. */
const problemLanguageNote =
  "In the language `Accept-Language` asks for among the store's languages, else the store's default language (English when the host names no store); the answer's Content-Language says which.";

const problemHeaders = {
  'content-language': { type: 'string', description: 'The language of title, detail and errors: `en`, `ar`, …' },
  vary: { type: 'string', description: 'Includes Accept-Language.' },
};

function responsesFor(codes: AnyProblemCode[], own: ProblemExamples) {
  const byStatus = new Map<number, AnyProblemCode[]>();
  for (const code of new Set(codes)) {
    const status = problemEntry(code).status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      {
        description: list
          .map((code) => `\`${code}\`: ${problemDocument(code, '', baseLanguage, own.details?.[code]).detail}`)
          .join(' '),
        ...(own.operators ? {} : { headers: problemHeaders }),
        content: { 'application/problem+json': { schema: problemSchema(list, own) } },
      },
    ]),
  );
}

/** Response entries for the problem documents a route without a body can answer with, grouped by status. */
export function problemResponses(...codes: ProblemCode[]) {
  return responsesFor(codes, {});
}

/** As problemResponses, in the operation's own words: its field errors, and details it words its own way. */
export function ownProblemResponses(codes: AnyProblemCode[], own: ProblemExamples) {
  return responsesFor(codes, own);
}

/**
 * As problemResponses, for a route with a JSON body: everything a body can be refused for as well,
 * with a validation example naming `body`'s own fields (or the given ones).
 */
export function bodyProblemResponses(body: TObject, codes: ProblemCode[] = [], own: ProblemExamples = {}) {
  return responsesFor([...bodyProblems, ...codes], { fieldErrors: requiredFieldsExample(body), ...own });
}

/** What any customer route can answer before it runs: the gate, CSRF, limits, dependencies. */
export const customerProblems: ProblemCode[] = [
  'store_not_found',
  'misdirected_request',
  'untrusted_origin',
  'csrf_token_mismatch',
  'rate_limited',
  'store_unavailable',
  'service_unavailable',
  'internal_error',
];
/** What any route with a JSON body can answer besides. */
export const bodyProblems: ProblemCode[] = [
  ...customerProblems,
  'payload_too_large',
  'unsupported_media_type',
  'validation_failed',
];
