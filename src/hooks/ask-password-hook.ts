import type { FastifyBaseLogger } from 'fastify';
import { passwordHookUrlProblem, type PasswordHook } from './password-hooks.js';
import { webhookHeaders } from './standard-webhooks.js';

export const passwordHookTimeoutMs = 5_000;

/** What the old system is asked: the account as it knew it, and the password typed. */
export interface OldPasswordQuestion {
  identity: string;
  password: string;
  external_id: string | null;
}

/** More than `{"valid": true}` with room to spare; a longer answer is not one. */
const maxAnswerBytes = 4096;

/** Reads at most `max` bytes of a body; null when it is longer (the rest is not read). */
async function readSmall(response: Response, max: number): Promise<string | null> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Asks the store's old system whether the password is the customer's: a POST signed as Standard
 * Webhooks sign, 5 s at most, redirects not followed (they would carry the password elsewhere).
 * Only `200 {"valid": true}` says yes; any other answer, a timeout or a refused connection is a
 * no, logged for the operator without the password.
 */
export async function askPasswordHook(
  hook: PasswordHook,
  question: OldPasswordQuestion,
  logger: Pick<FastifyBaseLogger, 'warn'>,
): Promise<boolean> {
  const refused = (reason: string) => {
    logger.warn({ hook: hook.url, reason }, 'password migration hook gave no answer that accepts the password');
    return false;
  };
  const urlProblem = passwordHookUrlProblem(hook.url);
  if (urlProblem !== null) return refused(urlProblem);
  const body = JSON.stringify(question);
  let response: Response;
  try {
    response = await fetch(hook.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...webhookHeaders([hook.key], body) },
      body,
      signal: AbortSignal.timeout(passwordHookTimeoutMs),
      redirect: 'manual',
    });
  } catch (error) {
    return refused(error instanceof Error ? error.message : String(error));
  }
  let text: string | null;
  try {
    text = await readSmall(response, maxAnswerBytes);
  } catch (error) {
    return refused(error instanceof Error ? error.message : String(error));
  }
  if (response.status !== 200) {
    // A wrong password is an ordinary answer of the old system, not worth a warning.
    if (response.status === 401 || response.status === 403) return false;
    return refused(`answered ${response.status}`);
  }
  if (text === null) return refused(`answered 200 with more than ${maxAnswerBytes} bytes`);
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return refused('answered 200 without a JSON body');
  }
  return typeof answer === 'object' && answer !== null && (answer as { valid?: unknown }).valid === true;
}
