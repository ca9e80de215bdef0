import nodemailer from 'nodemailer';
import type { Transport } from '../message.js';

export function createSmtpTransport(smtpUrl: string, from: string): Transport {
  const mailer = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  });
  return {
    name: 'smtp',
    async send(message) {
      await mailer.sendMail({
        from,
        to: message.to,
        subject: message.content.subject,
        text: message.content.text,
        html: message.content.html,
        headers: { 'X-Storefront-Message-Id': message.id },
      });
    },
    async close() {
      mailer.close();
    },
  };
}
