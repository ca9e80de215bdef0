import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { changePassword, changeProfile } from '../../auth/flows/account.js';
import { newPasswordErrors, validateName } from '../../auth/rules/fields.js';
import { validateLocale } from '../../auth/rules/locale.js';
import { declareRoute, wrongPasswordOutcome, type Outcomes } from '../core/declare.js';
import { accountOf, refuseInvalidBody, routeKit, type KitSource } from '../core/kit.js';
import { limits } from '../core/rate-limit.js';
import { storeCsrfKey } from '../core/csrf.js';
import { requestCookies, startSessionCookies } from '../core/session-cookie.js';
import { ChangePasswordBody, Customer, PasswordChangedStatus, ProfileBody } from '../core/schemas.js';

const passwordChangeOutcomes: Outcomes<'invalid' | 'wrong_password' | 'unauthenticated'> = {
  invalid: { problem: 'validation_failed', metric: 'invalid' },
  wrong_password: wrongPasswordOutcome('password.change'),
  unauthenticated: { problem: 'unauthenticated' },
};

const nameChangeOutcomes: Outcomes<'invalid' | 'unauthenticated'> = {
  invalid: { problem: 'validation_failed' },
  unauthenticated: { problem: 'unauthenticated' },
};

const changePasswordRoute = declareRoute({
  operationId: 'changePassword',
  summary: 'Change the password',
  description:
    "Checks current_password as a login does (it counts toward the failed-login limit; a wrong one is a 422 on current_password), applies the password rules, signs every other session out, and replaces the caller's session cookie and XSRF-TOKEN with new ones. Sends the customer a notice.",
  session: true,
  body: ChangePasswordBody,
  ownValidation: true,
  answer: PasswordChangedStatus,
  problems: [passwordChangeOutcomes],
  examples: {
    fieldErrors: {
      current_password: [fieldPhrase('wrong_current_password')],
      password: [fieldPhrase('password_number')],
      password_confirmation: [fieldPhrase('password_mismatch')],
    },
  },
});

const changeProfileRoute = declareRoute({
  operationId: 'changeProfile',
  summary: 'Change the name or the language',
  description:
    "Sets the name (by the same rules as at registration) and the language of the customer's messages (`locale`: one of the store's languages, or null for the store's default), each when sent; one of them is required.",
  session: true,
  body: ProfileBody,
  ownValidation: true,
  answer: Customer,
  problems: [nameChangeOutcomes],
  examples: { fieldErrors: { name: [fieldPhrase('required')] } },
});

/** The signed-in customer's own account: password and name. */
export function accountRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { config, keys, metrics } = services;
  const { depsOf, audit, limit, refusal, reauthenticated } = routeKit(services);
  const countChange = (outcome: string) => metrics.passwordChanges.inc({ outcome });

  return async (app) => {
    app.post('/password/change', changePasswordRoute, async (request, reply) => {
      const { sessionId, customer } = accountOf(request);
      refuseInvalidBody(request, newPasswordErrors);
      const client = { userAgent: request.headers['user-agent'], address: request.ip };
      const result = await reauthenticated(
        request,
        customer,
        () => changePassword(depsOf(request), request.store, { customer, sessionId, client }, request.body),
        () => countChange('throttled'),
      );
      if (!result.ok)
        throw refusal(request, passwordChangeOutcomes, result, { customerId: customer.id, count: countChange });
      countChange('success');
      audit(request, 'password.changed', customer.id);
      startSessionCookies(
        reply,
        requestCookies(config, request),
        storeCsrfKey(keys.csrf, request.store.id),
        result.value.sessionId,
      );
      return { status: 'password_changed' as const };
    });

    app.post('/profile', changeProfileRoute, async (request) => {
      const { customer } = accountOf(request);
      refuseInvalidBody(request, (fields) => {
        const errors = {};
        if (fields['name'] !== undefined) validateName(fields['name'], errors);
        if (fields['locale'] !== undefined) validateLocale(request.store, fields['locale'], errors);
        return errors;
      });
      await limit(request, [[limits.profileChanges, customer.id]]);
      const result = await changeProfile(depsOf(request), request.store, customer.id, request.body);
      if (!result.ok) throw refusal(request, nameChangeOutcomes, result);
      audit(request, 'profile.changed', customer.id);
      return result.value;
    });
  };
}
