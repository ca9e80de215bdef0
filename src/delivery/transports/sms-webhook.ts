import { createHmac } from 'node:crypto';
import type { Transport } from '../message.js';

export const smsWebhookTimeoutMs = 10_000;

export function signSmsBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** POSTs each SMS to the provider hook, signed so the provider can tell it came from us. */
export function createSmsWebhookTransport(url: string, secret: string): Transport {
  return {
    name: 'sms-webhook',
    async send(message) {
      const body = JSON.stringify({
        id: message.id,
        to: message.to,
        text: message.content.text,
        purpose: message.purpose,
      });
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signature': signSmsBody(secret, body) },
        body,
        signal: AbortSignal.timeout(smsWebhookTimeoutMs),
      });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`SMS hook answered ${response.status}`);
    },
  };
}
