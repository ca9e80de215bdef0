import type { Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { certificateFailure } from '../../tls.js';
import type { Transport } from '../message.js';

export interface SmtpTlsOptions {
  /** PEM CA bundle that verifies the server's certificate (SMTP_CA_FILE), in place of the public roots. */
  ca?: string | undefined;
}

/**
 * nodemailer settings for SMTP_URL. The URL is taken apart here rather than handed to nodemailer,
 * which would also read options from its query (`tls.rejectUnauthorized=false`, `ignoreTLS`).
 *
 * - `smtps://` (port 465 by default): TLS from the first byte.
 * - `smtp://` (port 587 by default): STARTTLS whenever the server offers it. It is required (the
 *   send fails before any AUTH or message is written) when the URL carries credentials, so they
 *   never cross the network in clear, and when SMTP_CA_FILE is set, since a CA for a server that
 *   then talks in clear would only look like protection. Otherwise a server that offers no
 *   STARTTLS (a relay on the same host, a mail catcher) gets the message in clear.
 *
 * Certificates are always verified, chain and host name.
 */
export function smtpOptions(smtpUrl: string, { ca }: SmtpTlsOptions = {}): SMTPTransport.Options {
  const url = new URL(smtpUrl);
  const secure = url.protocol === 'smtps:';
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  const credentials = user !== '' || pass !== '';
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
    secure,
    requireTLS: !secure && (credentials || ca !== undefined),
    ...(credentials ? { auth: { user, pass } } : {}),
    tls: { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  };
}

/** Says what went wrong with TLS in words an operator acts on; other errors pass unchanged. */
function explain(error: unknown, options: SMTPTransport.Options): unknown {
  const refused = certificateFailure(error);
  if (refused !== undefined)
    return new Error(`SMTP server's TLS ${refused} (check SMTP_CA_FILE and the host name in SMTP_URL)`, {
      cause: error,
    });
  const message = error instanceof Error ? error.message : String(error);
  if (options.requireTLS === true && (error as { code?: unknown }).code === 'ETLS')
    return new Error(
      `the SMTP server did not start TLS (STARTTLS), which is required when SMTP_URL carries credentials or SMTP_CA_FILE is set; nothing was sent (${message})`,
      { cause: error },
    );
  return error;
}

/**
 * The From of a store without a mail_from of its own: MAIL_FROM as the operator wrote it when it
 * names a sender (`Shop <a@b>`), else its bare address under the store's name, so one deployment's
 * stores each sign their own mail.
 */
export function fromLineOf(mailFrom: string, storeName: string): string | { name: string; address: string } {
  return /<[^<>]+>\s*$/.test(mailFrom) ? mailFrom : { name: storeName, address: mailFrom.trim() };
}

export function createSmtpTransport(smtpUrl: string, from: string, tls: SmtpTlsOptions = {}): Transport {
  const options = smtpOptions(smtpUrl, tls);
  // nodemailer is loaded with the first message rather than at the start, which it would slow by
  // 0.05–0.1 s in every deployment that sends no email.
  let mailer: Promise<Transporter<SMTPTransport.SentMessageInfo>> | undefined;
  const connect = () =>
    (mailer ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(options)));
  return {
    name: 'smtp',
    async send(message) {
      try {
        const transporter = await connect();
        await transporter.sendMail({
          from: message.from.mailFrom ?? fromLineOf(from, message.from.storeName),
          to: message.to,
          subject: message.content.subject,
          text: message.content.text,
          html: message.content.html,
          headers: { 'X-Storefront-Message-Id': message.id, 'Content-Language': message.content.language },
        });
      } catch (error) {
        throw explain(error, options);
      }
    },
    async close() {
      (await mailer)?.close();
    },
  };
}
