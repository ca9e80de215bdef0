import type { FastifyReply } from 'fastify';
import vary from 'vary';

/**
 * Says which language an answer is written in, and that another `Accept-Language` may get another
 * one (so a shared cache keeps each apart), keeping whatever else `Vary` already names.
 */
export function setLanguageHeaders(reply: FastifyReply, language: string): void {
  const present = reply.getHeader('vary');
  reply
    .header('content-language', language)
    .header(
      'vary',
      vary.append(Array.isArray(present) ? present.join(', ') : String(present ?? ''), 'Accept-Language'),
    );
}
