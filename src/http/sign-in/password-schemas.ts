import { describe } from '../kit.js';
import {
  AuthSession,
  bodyProblemResponses,
  customerProblems,
  LoginBody,
  problemResponses,
  SignedOutStatus,
} from '../schemas.js';

export const loginRefusedDetail = 'The identity or password is not correct.';

/** The OpenAPI description and validation of `POST /login`. */
export const loginSchema = {
  ...describe(
    'login',
    'Log in',
    'Checks the password and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN. Unknown identity, wrong password and an unverified account on a store requiring verification are indistinguishable 401s, each with the detail "The identity or password is not correct." A login from a device the customer has not signed in from for 90 days queues a new_sign_in message (store setting auth.sign_in_notices); the answer does not depend on it.',
  ),
  body: LoginBody,
  response: {
    200: AuthSession,
    ...bodyProblemResponses(LoginBody, ['unauthenticated'], {
      details: { unauthenticated: loginRefusedDetail },
    }),
  },
};

/** The OpenAPI description and validation of `GET /session`. */
export const sessionSchema = {
  ...describe(
    'session',
    'Who am I',
    'The customer of the session cookie; also usable by a reverse proxy as a forward-auth check.',
  ),
  security: [{ session: [] }],
  response: { 200: AuthSession, ...problemResponses(...customerProblems, 'unauthenticated') },
};

/** The OpenAPI description and validation of `POST /logout`. */
export const logoutSchema = {
  ...describe(
    'logout',
    'Log out',
    'Deletes the session on the server, expires the cookie and issues a fresh XSRF-TOKEN.',
  ),
  security: [{ session: [] }],
  response: { 200: SignedOutStatus, ...problemResponses(...customerProblems, 'unauthenticated') },
};
