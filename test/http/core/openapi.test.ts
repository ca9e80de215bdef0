import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { problemCatalogue } from '../../../src/http/core/problems.js';
import { api, createHarness } from '../../helpers/harness.js';
import { assertRedoclyClean } from '../../helpers/openapi-lint.js';

describe('the OpenAPI document', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  let document: any;
  before(async () => {
    harness = await createHarness();
    const t = await harness.start();
    const reply = await t.get(`${api}/openapi.json`);
    assert.equal(reply.status, 200);
    document = reply.body;
  });
  after(async () => harness.close());

  test('is OpenAPI 3.1 and describes every operation of the API, each with an operationId', () => {
    assert.equal(document.openapi, '3.1.0');
    const operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([url, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${url}`, operation })),
    );
    assert.deepEqual(operations.map((entry) => entry.key).sort(), [
      'GET /api/v1/csrf-cookie',
      'GET /api/v1/customer/auth/account/export',
      'GET /api/v1/customer/auth/account/two-factor',
      'GET /api/v1/customer/auth/forward',
      'GET /api/v1/customer/auth/passkeys',
      'GET /api/v1/customer/auth/providers',
      'GET /api/v1/customer/auth/providers/linked',
      'GET /api/v1/customer/auth/providers/{id}/callback',
      'GET /api/v1/customer/auth/providers/{id}/start',
      'GET /api/v1/customer/auth/session',
      'GET /api/v1/customer/auth/sessions',
      'GET /api/v1/health/live',
      'GET /api/v1/health/ready',
      'GET /api/v1/platform',
      'GET /sanctum/csrf-cookie',
      'POST /api/v1/customer/auth/account/delete',
      'POST /api/v1/customer/auth/account/two-factor/confirm',
      'POST /api/v1/customer/auth/account/two-factor/disable',
      'POST /api/v1/customer/auth/account/two-factor/recovery-codes',
      'POST /api/v1/customer/auth/account/two-factor/setup',
      'POST /api/v1/customer/auth/code/login',
      'POST /api/v1/customer/auth/code/request',
      'POST /api/v1/customer/auth/identity/change',
      'POST /api/v1/customer/auth/identity/confirm',
      'POST /api/v1/customer/auth/login',
      'POST /api/v1/customer/auth/logout',
      'POST /api/v1/customer/auth/passkeys/login',
      'POST /api/v1/customer/auth/passkeys/login/options',
      'POST /api/v1/customer/auth/passkeys/register',
      'POST /api/v1/customer/auth/passkeys/register/options',
      'POST /api/v1/customer/auth/passkeys/{id}/delete',
      'POST /api/v1/customer/auth/password/change',
      'POST /api/v1/customer/auth/password/forgot',
      'POST /api/v1/customer/auth/password/reset',
      'POST /api/v1/customer/auth/profile',
      'POST /api/v1/customer/auth/providers/{id}/callback',
      'POST /api/v1/customer/auth/providers/{id}/unlink',
      'POST /api/v1/customer/auth/register',
      'POST /api/v1/customer/auth/sessions/revoke-others',
      'POST /api/v1/customer/auth/sessions/{id}/revoke',
      'POST /api/v1/customer/auth/two-factor/verify',
      'POST /api/v1/customer/auth/verification/resend',
      'POST /api/v1/customer/auth/verify',
    ]);
    for (const { key, operation } of operations) assert.ok(operation.operationId, `${key} has an operationId`);
  });

  test('documents 503 service_unavailable for every request answered 202 with work behind it', () => {
    for (const path of ['verification/resend', 'password/forgot', 'code/request', 'identity/change']) {
      const operation = document.paths[`/api/v1/customer/auth/${path}`].post;
      assert.ok(operation.responses['202'], `${path} documents 202`);
      const codes = operation.responses['503'].content['application/problem+json'].schema.properties.code.enum;
      assert.ok(codes.includes('service_unavailable'), `${path} documents 503 service_unavailable`);
      assert.match(operation.description, /503 service_unavailable with Retry-After/, path);
    }
  });

  test('lists the problem codes each operation can answer with, under their statuses', () => {
    const register = document.paths['/api/v1/customer/auth/register'].post.responses;
    const codes = register['422'].content['application/problem+json'].schema.properties.code.enum;
    assert.deepEqual([...codes].sort(), ['identity_unavailable', 'validation_failed']);
    const login = document.paths['/api/v1/customer/auth/login'].post.responses;
    assert.ok(login['401'], 'login documents 401');
    assert.ok(login['429'], 'login documents 429');
    const deletion = document.paths['/api/v1/customer/auth/account/delete'].post.responses;
    assert.ok(deletion['401'] && deletion['422'] && deletion['429'], 'account deletion documents 401, 422 and 429');
    const exported = document.paths['/api/v1/customer/auth/account/export'].get.responses;
    assert.ok(exported['401'] && exported['429'], 'the export documents 401 and 429');
    const codeLogin = document.paths['/api/v1/customer/auth/code/login'].post.responses;
    assert.deepEqual([...codeLogin['422'].content['application/problem+json'].schema.properties.code.enum].sort(), [
      'invalid_identity_challenge',
      'validation_failed',
    ]);
    for (const path of ['/api/v1/customer/auth/code/request', '/api/v1/customer/auth/code/login']) {
      const notFound = document.paths[path].post.responses['404'];
      // store_not_found: a host that names no store (design: many stores).
      assert.deepEqual(
        notFound.content['application/problem+json'].schema.properties.code.enum,
        ['store_not_found', 'not_found'],
        path,
      );
    }
    const passkeyPaths = Object.keys(document.paths).filter((url) => url.includes('/passkeys'));
    assert.equal(passkeyPaths.length, 6);
    for (const url of passkeyPaths) {
      for (const operation of Object.values(document.paths[url] as Record<string, any>)) {
        const codes = operation.responses['404'].content['application/problem+json'].schema.properties.code.enum;
        assert.ok(codes.includes('not_found'), `${url} documents 404 not_found while passkeys are off`);
      }
    }
    const passkeyLogin = document.paths['/api/v1/customer/auth/passkeys/login'].post.responses;
    assert.ok(
      passkeyLogin['200'] && passkeyLogin['401'] && passkeyLogin['429'],
      'passkey login documents 200, 401, 429',
    );
    const passkeyRegister = document.paths['/api/v1/customer/auth/passkeys/register'].post.responses;
    assert.ok(passkeyRegister['201'] && passkeyRegister['401'] && passkeyRegister['422']);
    const confirm = document.paths['/api/v1/customer/auth/identity/confirm'].post.responses;
    const confirmCodes = confirm['422'].content['application/problem+json'].schema.properties.code.enum;
    assert.deepEqual([...confirmCodes].sort(), [
      'identity_unavailable',
      'invalid_identity_challenge',
      'validation_failed',
    ]);
    const change = document.paths['/api/v1/customer/auth/identity/change'].post.responses;
    assert.ok(
      change['202'] && change['401'] && change['422'] && change['429'],
      'identity change documents 202, 401, 422, 429',
    );
    const ready = document.paths['/api/v1/health/ready'].get.responses['503'];
    assert.deepEqual(ready.content['application/problem+json'].schema.properties.code.enum, ['deployment_not_ready']);
    const documented = new Set<string>();
    for (const methods of Object.values(document.paths as Record<string, Record<string, any>>)) {
      for (const operation of Object.values(methods)) {
        for (const response of Object.values(operation.responses as Record<string, any>)) {
          const code = response.content?.['application/problem+json']?.schema.properties.code;
          for (const value of code?.enum ?? []) documented.add(value);
        }
      }
    }
    const unrouted = new Set(['not_found', 'method_not_allowed']);
    for (const code of Object.keys(problemCatalogue)) {
      if (!unrouted.has(code)) assert.ok(documented.has(code), `${code} appears in the document`);
    }
  });

  test("shows each problem response's example with the operation's own fields, and readiness checks only on readiness", () => {
    for (const [url, methods] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(methods)) {
        const bodyFields = Object.keys(operation.requestBody?.content['application/json'].schema.properties ?? {});
        for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
          const media = response.content?.['application/problem+json'];
          if (media === undefined) continue;
          const where = `${method.toUpperCase()} ${url} ${status}`;
          // OpenAPI 3.1 keeps JSON Schema's `examples`; Swagger UI shows the first.
          const example = media.schema.examples?.[0];
          assert.equal(example?.status, Number(status), `${where} has an example of its own status`);
          assert.ok(media.schema.properties.code.enum.includes(example.code), `${where} example code`);
          const ownsChecks = url === '/api/v1/health/ready' && status === '503';
          assert.equal('checks' in media.schema.properties, ownsChecks, `${where} documents checks`);
          assert.equal('checks' in example, ownsChecks, `${where} example shows checks`);
          if (example.code === 'validation_failed') {
            const fields = Object.keys(example.errors);
            assert.ok(fields.length > 0, `${where} example names fields`);
            for (const field of fields) assert.ok(bodyFields.includes(field), `${where} example field ${field}`);
          } else {
            assert.equal('errors' in example, false, `${where} example shows no errors`);
          }
        }
      }
    }
    const register = document.paths['/api/v1/customer/auth/register'].post.responses['422'];
    assert.deepEqual(Object.keys(register.content['application/problem+json'].schema.examples[0].errors).sort(), [
      'email',
      'name',
      'password',
      'password_confirmation',
    ]);
  });

  test('passes the Redocly linter without errors', async () => {
    await assertRedoclyClean(document);
  });
});
