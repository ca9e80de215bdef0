import { auth } from '../helpers/harness.js';
import type { Endpoint } from './fuzz-cases.js';

/**
 * The signed-in customer's calls and the passkey calls, fuzzed like the brief's (see
 * fuzz-account.test.ts). Where success would end the seeded session (a password change, a
 * deletion), `current_password` never offers the right password: success there is the business of
 * the account suites, and the fuzz must keep reaching the handlers.
 */
export const accountEndpoints: Array<Endpoint & { endsSession?: boolean }> = [
  {
    name: 'change password',
    method: 'POST',
    path: `${auth}/password/change`,
    success: [200],
    fields: ['current_password', 'password', 'password_confirmation'],
    signedIn: true,
    endsSession: true,
  },
  { name: 'change name', method: 'POST', path: `${auth}/profile`, success: [200], fields: ['name'], signedIn: true },
  {
    name: 'identity change',
    method: 'POST',
    path: `${auth}/identity/change`,
    success: [202],
    fields: ['email', 'phone', 'current_password'],
    signedIn: true,
  },
  {
    name: 'identity confirm',
    method: 'POST',
    path: `${auth}/identity/confirm`,
    success: [200],
    fields: ['code'],
    signedIn: true,
  },
  { name: 'export', method: 'GET', path: `${auth}/account/export`, success: [200], fields: [], signedIn: true },
  {
    name: 'delete account',
    method: 'POST',
    path: `${auth}/account/delete`,
    success: [200],
    fields: ['current_password'],
    signedIn: true,
    endsSession: true,
  },
  { name: 'sessions', method: 'GET', path: `${auth}/sessions`, success: [200], fields: [], signedIn: true },
  {
    name: 'revoke a session',
    method: 'POST',
    path: `${auth}/sessions/:id/revoke`,
    success: [200],
    fields: [],
    signedIn: true,
  },
  {
    name: 'revoke other sessions',
    method: 'POST',
    path: `${auth}/sessions/revoke-others`,
    success: [200],
    fields: [],
    signedIn: true,
  },
  {
    name: 'passkey registration options',
    method: 'POST',
    path: `${auth}/passkeys/register/options`,
    success: [200],
    fields: [],
    signedIn: true,
  },
  {
    name: 'passkey registration',
    method: 'POST',
    path: `${auth}/passkeys/register`,
    success: [201],
    fields: ['credential', 'name', 'current_password'],
    signedIn: true,
    ceremony: 'register',
  },
  { name: 'passkeys', method: 'GET', path: `${auth}/passkeys`, success: [200], fields: [], signedIn: true },
  {
    name: 'remove a passkey',
    method: 'POST',
    path: `${auth}/passkeys/:id/delete`,
    success: [200],
    fields: [],
    signedIn: true,
  },
  {
    name: 'passkey sign-in options',
    method: 'POST',
    path: `${auth}/passkeys/login/options`,
    success: [200],
    fields: [],
  },
  {
    name: 'passkey sign-in',
    method: 'POST',
    path: `${auth}/passkeys/login`,
    success: [200],
    fields: ['credential'],
    ceremony: 'login',
  },
];
