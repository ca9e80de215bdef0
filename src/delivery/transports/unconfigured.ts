import type { Transport } from '../message.js';

/**
 * Stands in for a channel whose transport is not configured where the log may not be used
 * (production): the message waits and is retried instead of putting its code in the log.
 */
export function createUnconfiguredTransport(variable: string): Transport {
  return {
    name: 'unconfigured',
    async send() {
      throw new Error(
        `${variable} is not set; in production messages go to the log only with DELIVERY_LOG_IN_PRODUCTION=true`,
      );
    },
  };
}
