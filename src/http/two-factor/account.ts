import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import QRCode from 'qrcode';
import {
  confirmSecondStepSetup,
  renewRecoveryCodes,
  secondStepStatus,
  setUpSecondStep,
  turnOffSecondStep,
} from '../../auth/flows/two-factor.js';
import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import { declareRoute, wrongPasswordOutcome, type Outcomes } from '../core/declare.js';
import { accountOf, routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { limits } from '../core/rate-limit.js';
import {
  RecoveryCodes,
  TwoFactorChangeBody,
  TwoFactorConfirmBody,
  TwoFactorOffStatus,
  TwoFactorSetup,
  TwoFactorSetupBody,
  TwoFactorStatus,
} from './schemas.js';

const outcomes = (
  operation: string,
): Outcomes<'wrong_password' | 'invalid' | 'unauthenticated' | 'identity_unverified' | 'on' | 'off' | 'enforced'> => ({
  wrong_password: wrongPasswordOutcome(operation),
  invalid: { problem: 'validation_failed' },
  unauthenticated: { problem: 'unauthenticated' },
  identity_unverified: { problem: 'identity_unverified' },
  on: { problem: 'two_factor_on' },
  off: { problem: 'two_factor_off' },
  enforced: { problem: 'two_factor_enforced' },
});

// Every route here needs the session and is a 404 while the store offers no second step.
const account = { session: true, feature: 'twoFactorOffered' } as const;

const statusRoute = declareRoute({
  operationId: 'twoFactorStatus',
  summary: 'My second step',
  description:
    '`off`, `pending` (set up, not yet confirmed with a code) or `on`, the recovery codes left, and what the store asks (`optional` or `required`: then it cannot be turned off).',
  ...account,
  answer: TwoFactorStatus,
});

const setupRoute = declareRoute({
  operationId: 'setUpTwoFactor',
  summary: 'Set up a second step',
  description:
    'A new TOTP secret (RFC 6238: SHA-1, six digits, 30 seconds, what authenticator apps use) for the customer to add to their app: as text, as an `otpauth://` URI and as a QR code (SVG). Nothing changes at sign-in until `confirm`; setting up again replaces an unconfirmed secret. An account whose email or phone is not yet proven cannot: 403 identity_unverified. Already on: 409 two_factor_on.',
  ...account,
  body: TwoFactorSetupBody,
  answer: TwoFactorSetup,
  problems: [outcomes('two_factor.setup')],
  examples: { fieldErrors: { current_password: [fieldPhrase('wrong_current_password')] } },
});

const confirmRoute = declareRoute({
  operationId: 'confirmTwoFactor',
  summary: 'Turn the second step on',
  description:
    'Confirms the secret of `setup` with a code of the app and turns the second step on: from now on a password, code or provider sign-in answers `two_factor_required` and finishes at `POST /two-factor/verify` (a passkey needs none). Answers the ten recovery codes, once. Sends the customer a notice. Without a setup: 409 two_factor_off.',
  ...account,
  body: TwoFactorConfirmBody,
  answer: RecoveryCodes,
  problems: [outcomes('two_factor.confirm')],
  examples: { fieldErrors: { code: [fieldPhrase('second_step_code')] } },
});

const disableRoute = declareRoute({
  operationId: 'disableTwoFactor',
  summary: 'Turn the second step off',
  description:
    'With the current password and a code (of the app, or a recovery code): the secret and recovery codes are deleted, and sign-ins waiting for them end. Sends the customer a notice. 409 two_factor_enforced when the store requires a second step.',
  ...account,
  body: TwoFactorChangeBody,
  answer: TwoFactorOffStatus,
  problems: [outcomes('two_factor.disable')],
  examples: { fieldErrors: { code: [fieldPhrase('second_step_code')] } },
});

const recoveryCodesRoute = declareRoute({
  operationId: 'renewRecoveryCodes',
  summary: 'New recovery codes',
  description:
    'With the current password and a code (of the app, or a recovery code): ten new recovery codes, answered once; the old ones stop working.',
  ...account,
  body: TwoFactorChangeBody,
  answer: RecoveryCodes,
  problems: [outcomes('two_factor.recovery_codes')],
  examples: { fieldErrors: { code: [fieldPhrase('second_step_code')] } },
});

/** The second step in the account area: set up, confirm, turn off, new recovery codes. */
export function twoFactorRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { depsOf, audit, limit, refusal, reauthenticated } = routeKit(services);

  return async (app) => {
    app.get('/account/two-factor', statusRoute, async (request) => {
      const { customer } = accountOf(request);
      const { status, recoveryCodesLeft } = await secondStepStatus(storeDbOf(services, request), customer);
      const store = request.store.twoFactor === 'required' ? ('required' as const) : ('optional' as const);
      return { status, recovery_codes_left: recoveryCodesLeft, store };
    });

    app.post('/account/two-factor/setup', setupRoute, async (request) => {
      const { customer } = accountOf(request);
      const password = request.body.current_password;
      const result = await reauthenticated(request, customer, () =>
        setUpSecondStep(depsOf(request), request.store, customer, password),
      );
      if (!result.ok) throw refusal(request, outcomes('two_factor.setup'), result, { customerId: customer.id });
      const { secret, uri } = result.value;
      return { secret, otpauth_uri: uri, qr_svg: await QRCode.toString(uri, { type: 'svg', margin: 2 }) };
    });

    app.post('/account/two-factor/confirm', confirmRoute, async (request) => {
      const { customer } = accountOf(request);
      // A guess at six digits: counted per customer, as a change of passkeys is.
      await limit(request, [[limits.passkeyChanges, customer.id]]);
      const result = await confirmSecondStepSetup(depsOf(request), request.store, customer, request.body.code);
      if (!result.ok) throw refusal(request, outcomes('two_factor.confirm'), result, { customerId: customer.id });
      audit(request, 'two_factor.enabled', customer.id);
      return { recovery_codes: result.value.recoveryCodes };
    });

    app.post('/account/two-factor/disable', disableRoute, async (request) => {
      const { customer } = accountOf(request);
      const { current_password: password, code } = request.body;
      const result = await reauthenticated(request, customer, () =>
        turnOffSecondStep(depsOf(request), request.store, customer, password, code),
      );
      if (!result.ok) throw refusal(request, outcomes('two_factor.disable'), result, { customerId: customer.id });
      audit(request, 'two_factor.disabled', customer.id);
      return { status: 'off' as const };
    });

    app.post('/account/two-factor/recovery-codes', recoveryCodesRoute, async (request) => {
      const { customer } = accountOf(request);
      const { current_password: password, code } = request.body;
      const result = await reauthenticated(request, customer, () =>
        renewRecoveryCodes(depsOf(request), customer, password, code),
      );
      if (!result.ok)
        throw refusal(request, outcomes('two_factor.recovery_codes'), result, { customerId: customer.id });
      audit(request, 'two_factor.recovery_codes_renewed', customer.id);
      return { recovery_codes: result.value.recoveryCodes };
    });
  };
}
