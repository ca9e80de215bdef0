import { pendingSignInLifetimeSeconds } from '../../auth/tables/pending-sign-ins.js';
import { handleCookie } from '../core/handle-cookie.js';

/**
 * The cookie of a sign-in waiting for its second step: only the browser whose first step was
 * right can finish it, and only at `two-factor/verify`.
 */
export const secondStepCookie = handleCookie(
  'storefront_two_factor',
  '/api/v1/customer/auth/two-factor',
  'second-step',
  pendingSignInLifetimeSeconds,
);
