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
        language: message.content.language,
        purpose: message.purpose,
        store_id: message.from.storeId,
        sender: message.from.smsSender,
      });
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signature': signSmsBody(secret, body) },
        body,
        signal: AbortSignal.timeout(smsWebhookTimeoutMs),
        // Following would re-send the signed body, code included, to wherever the answer points
        // (past the https-or-loopback rule), or turn it into a GET whose 2xx proves nothing.
        redirect: 'manual',
      });
      await response.body?.cancel();
      if (response.status >= 300 && response.status < 400) {
        const location = response.headers.get('location') ?? '(none)';
        throw new Error(`SMS hook answered ${response.status} redirecting to ${location}; redirects are not followed`);
      }
      if (!response.ok) throw new Error(`SMS hook answered ${response.status}`);
    },
  };
}
