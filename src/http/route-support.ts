import type { FastifyRequest } from 'fastify';
import type { CustomerRow } from '../auth/customers.js';
import type { AuthDeps } from '../auth/deps.js';
import { findSessionCustomer } from '../auth/sessions.js';
import type { Edge } from './edge.js';
import { ProblemError } from './problems.js';

/** What the domain's flows need from the running services; the same for every route module. */
export function authDeps(services: Edge): AuthDeps {
  return {
    db: services.db,
    clock: services.clock,
    hasher: services.hasher,
    keys: services.keys,
    allowedCallingCodes: services.config.smsAllowedCallingCodes,
    messagesQueued: () => services.dispatcher.nudge(),
  };
}

/**
 * The request's session cookie and its live customer, or `401 unauthenticated` before anything
 * else of the request is looked at: the first step of every call of the account area.
 */
export async function signedIn(
  services: Pick<Edge, 'db' | 'clock' | 'config'>,
  request: FastifyRequest,
): Promise<{ sessionId: string; customer: CustomerRow }> {
  const sessionId = request.cookies[services.config.sessionCookieName];
  const customer = sessionId === undefined ? null : await findSessionCustomer(services.db, services.clock, sessionId);
  if (sessionId === undefined || customer === null) throw new ProblemError('unauthenticated');
  return { sessionId, customer };
}
