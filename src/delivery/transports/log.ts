import type { FastifyBaseLogger } from 'fastify';
import type { Transport } from '../message.js';

/**
 * Development transport: the whole message, code included, goes to the service log. With
 * `highlight` (development), a person also gets the subject, which carries the code, as a plain
 * line set apart from the JSON lines; the JSON line stays for machines.
 */
export function createLogTransport(logger: FastifyBaseLogger, highlight?: (line: string) => void): Transport {
  return {
    name: 'log',
    async send(message) {
      logger.info(
        {
          message_id: message.id,
          channel: message.channel,
          purpose: message.purpose,
          to: message.to,
          subject: message.content.subject,
          text: message.content.text,
        },
        `message to ${message.to}: ${message.content.subject}`,
      );
      highlight?.(`\n  >>> ${message.to}: ${message.content.subject}\n\n`);
    },
  };
}
