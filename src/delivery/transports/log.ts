import type { FastifyBaseLogger } from 'fastify';
import type { Transport } from '../message.js';

/** Development transport: the whole message, code included, goes to the service log. */
export function createLogTransport(logger: FastifyBaseLogger): Transport {
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
    },
  };
}
