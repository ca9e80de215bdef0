import http from 'node:http';
import net from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { Database } from '../../src/storage/database.js';

/** A port nothing listens on at the moment it is returned (the OS handed it out, then it was freed). */
export async function unusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface ReceivedMail {
  envelopeFrom: string | false;
  envelopeTo: string[];
  raw: string;
  /** The session was TLS (implicit or after STARTTLS) when the message came. */
  secure: boolean;
}

export interface ReceivedLogin {
  username: string;
  password: string;
  /** The session was TLS when the credentials came. */
  secure: boolean;
}

export interface SmtpServerOptions {
  /** Serve TLS with this key and certificate (PEM): from the first byte, or offered as STARTTLS. */
  tls?: { key: string; cert: string; implicit: boolean };
  /** The loopback address to listen on. */
  host?: string;
}

export interface TestSmtpServer {
  port: number;
  url: string;
  received: ReceivedMail[];
  /** Every AUTH the server was given, accepted whatever the credentials, in clear as well. */
  logins: ReceivedLogin[];
  close(): Promise<void>;
}

/**
 * A real SMTP server on 127.0.0.1 (or `host`); it keeps every message it accepts. Without `tls` it offers no
 * STARTTLS. It takes AUTH when a client offers it, even in clear, so a test sees credentials a
 * client should not have sent.
 */
export async function startSmtpServer(
  port = 0,
  { tls, host = '127.0.0.1' }: SmtpServerOptions = {},
): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const logins: ReceivedLogin[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    ...(tls === undefined
      ? { disabledCommands: ['STARTTLS'] }
      : { secure: tls.implicit, key: tls.key, cert: tls.cert }),
    logger: false,
    onAuth(auth, session, callback) {
      logins.push({ username: auth.username ?? '', password: auth.password ?? '', secure: session.secure });
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        // Recorded before the server says 250, so the message is here when the sender's send resolves.
        received.push({
          envelopeFrom: session.envelope.mailFrom === false ? false : session.envelope.mailFrom.address,
          envelopeTo: session.envelope.rcptTo.map((address) => address.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          secure: session.secure,
        });
        callback();
      });
    },
  });
  // A refused TLS handshake is what some tests are after; it must not end the test process.
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.server.address() as net.AddressInfo).port;
  return {
    port: actual,
    url: `${tls?.implicit === true ? 'smtps' : 'smtp'}://${host}:${actual}`,
    received,
    logins,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface MailPart {
  /** Header names lowercased; folded lines joined. */
  headers: Map<string, string>;
  /** The decoded body (quoted-printable and base64 undone) for a leaf part. */
  body: string;
  parts: MailPart[];
}

function decodeQuotedPrintable(text: string): string {
  const withoutSoftBreaks = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < withoutSoftBreaks.length; i += 1) {
    const char = withoutSoftBreaks[i]!;
    const hex = withoutSoftBreaks.slice(i + 1, i + 3);
    if (char === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(char, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Enough of RFC 5322 / MIME to read what nodemailer writes: headers, multipart, QP and base64. */
export function parseMail(raw: string): MailPart {
  const split = raw.search(/\r?\n\r?\n/);
  const headerText = split === -1 ? raw : raw.slice(0, split);
  const bodyText = split === -1 ? '' : raw.slice(split).replace(/^\r?\n\r?\n/, '');
  const headers = new Map<string, string>();
  for (const line of headerText.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const type = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (type.toLowerCase().startsWith('multipart/') && boundary !== undefined) {
    const sections = bodyText.split(`--${boundary}`);
    const parts = sections
      .slice(1)
      .filter((section) => !section.startsWith('--'))
      .map((section) => parseMail(section.replace(/^\r?\n/, '').replace(/\r?\n$/, '')));
    return { headers, body: '', parts };
  }
  const encoding = (headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  const body =
    encoding === 'quoted-printable'
      ? decodeQuotedPrintable(bodyText)
      : encoding === 'base64'
        ? Buffer.from(bodyText.replace(/\s+/g, ''), 'base64').toString('utf8')
        : bodyText;
  return { headers, body, parts: [] };
}

/** A header as written, its RFC 2047 encoded words (`=?UTF-8?B?…?=`, `=?UTF-8?Q?…?=`) decoded. */
export function decodeHeader(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?utf-8\?([bq])\?([^?]*)\?=/gi, (_, encoding: string, text: string) =>
      encoding.toLowerCase() === 'b'
        ? Buffer.from(text, 'base64').toString('utf8')
        : decodeQuotedPrintable(text.replace(/_/g, ' ')),
    );
}

/** Every leaf part of a parsed message, depth first. */
export function leafParts(part: MailPart): MailPart[] {
  return part.parts.length === 0 ? [part] : part.parts.flatMap(leafParts);
}

export interface HookRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
}

/** A redirect answers with this status and `Location`, and carries nothing further itself. */
export interface HookRedirect {
  redirect: 301 | 302 | 303 | 307 | 308;
  location: string;
}

export type HookBehaviour = 'ok' | 'error' | 'destroy' | HookRedirect;

export interface TestHookServer {
  url: string;
  requests: HookRequest[];
  /** How the next requests are answered, one entry each; when empty, `fallback` applies. */
  script: HookBehaviour[];
  fallback: HookBehaviour;
  /** Connections dropped on purpose (those requests are not in `requests`). */
  dropped: number;
  close(): Promise<void>;
}

/** A stand-in SMS provider: records each request whole, then answers 200, 500, a redirect, or drops the connection. */
export async function startHookServer(): Promise<TestHookServer> {
  const hook: Omit<TestHookServer, 'url' | 'close'> = { requests: [], script: [], fallback: 'ok', dropped: 0 };
  const server = http.createServer((request, response) => {
    const behaviour = hook.script.shift() ?? hook.fallback;
    if (behaviour === 'destroy') {
      hook.dropped += 1;
      request.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      hook.requests.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        rawBody: Buffer.concat(chunks).toString('utf8'),
      });
      if (typeof behaviour === 'object') {
        response.writeHead(behaviour.redirect, { location: behaviour.location }).end();
        return;
      }
      const status = behaviour === 'ok' ? 200 : 500;
      response
        .writeHead(status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ accepted: status === 200 }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return Object.assign(hook, {
    url: `http://127.0.0.1:${port}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

export interface OutboxRow {
  id: string;
  channel: string;
  purpose: string;
  recipient: string;
  status: string;
  attempts: number;
  sealed_body: string | null;
  last_error: string | null;
  next_attempt_at: Date;
  challenge_id: string | null;
}

/** The outbox as the database holds it, oldest first. */
export async function outboxRows(db: Database): Promise<OutboxRow[]> {
  const rows = await db.query<OutboxRow>(
    `SELECT id::text AS id, channel, purpose, recipient, status, attempts, sealed_body, last_error, next_attempt_at,
            challenge_id::text AS challenge_id
       FROM outbox ORDER BY id`,
  );
  return rows.map((row) => ({ ...row, next_attempt_at: new Date(row.next_attempt_at) }));
}

export async function onlyOutboxRow(db: Database): Promise<OutboxRow> {
  const rows = await outboxRows(db);
  if (rows.length !== 1) throw new Error(`expected one outbox row, found ${rows.length}`);
  return rows[0]!;
}
