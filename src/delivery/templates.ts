import type { Channel, MessageContent, MessagePurpose } from './message.js';

/**
 * What a message may say. Nothing here is text a customer or anyone else chose (a customer's name,
 * a passkey's name): a message goes to the address's owner, who may not be whoever typed it (a
 * squatter who registered their address, a thief who took the session), and such text in a
 * notice can pose as the store's own words ("This was you. To undo it visit …").
 */
export interface TemplateInput {
  channel: Channel;
  purpose: MessagePurpose;
  /** The operator's, from the store settings. */
  storeName: string;
  /** A code and how long it lives, in whole minutes (the message says so). */
  code?: { value: string; lifetimeMinutes: number };
  /** For `password_changed`: a reset ends every session, a change keeps the device that made it. */
  signedOut?: 'every_device' | 'other_devices';
  /** For `identity_changed`: the account's new identity, masked. */
  maskedIdentity?: string;
  /** For `new_sign_in`: when, the device's family in a few words and the masked address. */
  signIn?: SignInDetails;
}

export interface SignInDetails {
  at: Date;
  /** A device family from a fixed list (deviceFamily), never the raw user-agent. */
  device: string;
  /** The network only, a /24 or /48 (maskAddress). */
  address: string;
}

/** "2026-11-23 22:24 UTC": one unambiguous form, whatever the reader's locale. */
function formatWhen(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** What one message says: its subject, and its lines in the order they are read. */
interface Words {
  subject: string;
  lines: string[];
}

/** What the words are made from, worked out once from the input. */
interface WordsContext {
  storeName: string;
  code: string;
  lifetimeMinutes: number;
  /** "email address" or "phone number": the channel's word for the identity. */
  identity: string;
  input: TemplateInput;
}

const expiry = ({ lifetimeMinutes }: WordsContext) => `It expires in ${lifetimeMinutes} minutes and works once.`;

/** The words of each purpose. No links: nothing here is built from a request's Host header. */
const wordsOf: { [P in MessagePurpose]: (context: WordsContext) => Words } = {
  verification: (c) => ({
    subject: `${c.code} is your ${c.storeName} verification code`,
    lines: [
      `Your ${c.storeName} verification code is ${c.code}.`,
      expiry(c),
      `If you did not create an account at ${c.storeName}, ignore this message.`,
    ],
  }),
  password_reset: (c) => ({
    subject: `${c.code} is your ${c.storeName} password reset code`,
    lines: [
      `Your ${c.storeName} password reset code is ${c.code}.`,
      expiry(c),
      'If you did not ask to reset your password, ignore this message; your password stays as it is.',
    ],
  }),
  sign_in: (c) => ({
    subject: `${c.code} is your ${c.storeName} sign-in code`,
    lines: [
      `Your ${c.storeName} sign-in code is ${c.code}.`,
      expiry(c),
      'If you did not ask to sign in, ignore this message; nobody can sign in without the code.',
    ],
  }),
  password_changed: ({ storeName, input }) => ({
    subject: `Your ${storeName} password was changed`,
    lines: [
      input.signedOut === 'other_devices'
        ? `The password of your ${storeName} account was just changed, and every other device was signed out.`
        : `The password of your ${storeName} account was just changed, and every device was signed out.`,
      'If this was not you, reset your password right away.',
    ],
  }),
  new_sign_in: ({ storeName, input }) => {
    const signIn = input.signIn!;
    return {
      subject: `New sign-in to your ${storeName} account`,
      lines: [
        `Your ${storeName} account was signed in to at ${formatWhen(signIn.at)} from ${signIn.device}, network ${signIn.address}.`,
        'If this was not you, reset your password right away.',
        'If it was you, there is nothing to do.',
      ],
    };
  },
  account_deleted: ({ storeName }) => ({
    subject: `Your ${storeName} account was deleted`,
    lines: [
      `Your ${storeName} account and everything it held were just deleted, and every device was signed out.`,
      `This address can be used to create a new account at ${storeName} at any time.`,
    ],
  }),
  identity_change: (c) => ({
    subject: `${c.code} is your ${c.storeName} code to change your ${c.identity}`,
    lines: [
      `Your ${c.storeName} confirmation code is ${c.code}; it moves your account to this ${c.identity}.`,
      expiry(c),
      `If you did not ask to change your ${c.identity} at ${c.storeName}, ignore this message; nothing changes.`,
    ],
  }),
  identity_taken: ({ storeName, identity }) => ({
    subject: `This ${identity} already has a ${storeName} account`,
    lines: [
      `Someone asked to move a ${storeName} account to this ${identity}, but it already has an account, so nothing changed.`,
      `If this was you, sign in with this ${identity} instead; otherwise ignore this message.`,
    ],
  }),
  passkey_added: ({ storeName }) => ({
    subject: `A passkey was added to your ${storeName} account`,
    lines: [
      `A passkey was just added to your ${storeName} account; it signs in without your password.`,
      'If this was not you, remove it in your account area and reset your password right away.',
    ],
  }),
  provider_linked: ({ storeName }) => ({
    subject: `A sign-in provider was linked to your ${storeName} account`,
    lines: [
      `An account at a sign-in provider (such as Google or Apple) was just linked to your ${storeName} account; it signs in without your password.`,
      'If this was not you, unlink it in your account area and reset your password right away.',
    ],
  }),
  identity_changed: ({ storeName, identity, input }) => ({
    subject: `Your ${storeName} ${identity} was changed`,
    lines: [
      `Your ${storeName} account now uses ${input.maskedIdentity ?? `another ${identity}`} instead of this one, and every other device was signed out.`,
      `If this was not you, contact ${storeName} right away.`,
    ],
  }),
};

/** The words of every message, as an SMS (its first two lines) or an email (text and HTML). */
export function renderMessage(input: TemplateInput): MessageContent {
  const { storeName } = input;
  const code = input.code?.value ?? '';
  const { subject, lines } = wordsOf[input.purpose]({
    storeName,
    code,
    lifetimeMinutes: input.code?.lifetimeMinutes ?? 0,
    identity: input.channel === 'email' ? 'email address' : 'phone number',
    input,
  });
  if (input.channel === 'sms') {
    return { subject, text: `${storeName}: ${lines.slice(0, 2).join(' ')}`, html: '' };
  }
  return emailContent(storeName, code, { subject, lines });
}

/** A greeting, the lines and the store's name, as text and as HTML with the code stood out. */
function emailContent(storeName: string, code: string, { subject, lines }: Words): MessageContent {
  // No name: see TemplateInput.
  const greeting = 'Hello,';
  return {
    subject,
    text: [greeting, '', ...lines, '', `— ${storeName}`].join('\n'),
    html: [
      '<!doctype html><html><body style="font-family:sans-serif">',
      `<p>${escapeHtml(greeting)}</p>`,
      ...lines.map((line) =>
        code !== '' && line.includes(code)
          ? `<p>${escapeHtml(line).replace(code, `<strong style="font-size:1.4em;letter-spacing:0.2em">${code}</strong>`)}</p>`
          : `<p>${escapeHtml(line)}</p>`,
      ),
      `<p>— ${escapeHtml(storeName)}</p>`,
      '</body></html>',
    ].join('\n'),
  };
}
