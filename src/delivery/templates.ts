import { catalogue } from '../i18n/strings.js';
import { renderTemplate, type MessageTemplate } from './message-templates.js';
import type { StoreLanguages } from '../i18n/negotiate.js';
import type { Channel, MessageBranding, MessageContent, MessagePurpose } from './message.js';

/**
 * What a message may say. Nothing here is text a customer or anyone else chose (a customer's name,
 * a passkey's name): a message goes to the address's owner, who may not be whoever typed it (a
 * squatter who registered their address, a thief who took the session), and such text in a
 * notice can pose as the store's own words ("This was you. To undo it visit …").
 */
export interface TemplateInput {
  channel: Channel;
  purpose: MessagePurpose;
  /** The language it is written in: one of the catalogue's (see messageLanguage). */
  language: string;
  /** The operator's, from the store settings. */
  storeName: string;
  /** The store's logo (in notices only: a code's email loads no remote image), colour and support link. */
  branding?: MessageBranding | undefined;
  /**
   * The customer's name, for a store's template of a notice only (the built-in words name no one):
   * null while the identity is unproven, and kept out of subjects, since whoever registered an
   * address chose it.
   */
  customerName?: string | null;
  /**
   * A code and how long it lives, in whole minutes (the message says so); an invitation's, which
   * lives for days, says until when.
   */
  code?: { value: string; lifetimeMinutes: number; expiresAt?: Date };
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

/**
 * The language a customer's messages are written in: their recorded locale while the store still
 * speaks it, else the store's default (null, or a language the store has since dropped).
 */
export function messageLanguage(store: StoreLanguages, locale: string | null | undefined): string {
  return locale != null && store.languages.includes(locale) ? locale : store.defaultLanguage;
}

/** "2026-11-23 22:24 UTC": one unambiguous form, whatever the reader's language. */
function formatWhen(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Unicode isolates: in right-to-left text a Latin store name, a code or an address keeps its own
// direction and does not drag the words around it (a store name first in an SMS would otherwise
// make the whole message read left to right). Two UTF-16 units each; the SMS budget counts them.
const firstStrongIsolate = '\u2068';
const leftToRightIsolate = '\u2066';
const popIsolate = '\u2069';

/**
 * A value put into the words (the store's name, the code, an address): marked where it stands,
 * so each form (plain text, HTML) sets it apart in its own way. Private-use characters, which no
 * string of the catalogue holds and HTML escaping leaves alone.
 */
interface Inserted {
  value: string;
  /** `code`: stood out, left to right; `ltr`: a date, an address; `auto`: a name, by its own letters. */
  kind: 'code' | 'ltr' | 'auto';
}
const markOf = (index: number) => `\uE000${index}\uE001`;
const marks = /\uE000(\d+)\uE001/g;

/** The words of one message in one language, with the values it carries marked. */
class Wording {
  private readonly inserted: Inserted[] = [];
  readonly rtl: boolean;

  constructor(
    readonly language: string,
    /** The store's primary colour, for the code; none: the reader's own text colour. */
    private readonly codeColour: string | null = null,
  ) {
    this.rtl = catalogue.direction(language) === 'rtl';
  }

  /** A value of the message's, to be set apart from the words around it. */
  insert(value: string, kind: Inserted['kind'] = 'auto'): string {
    this.inserted.push({ value, kind });
    return markOf(this.inserted.length - 1);
  }

  say(key: string, params: Record<string, string | number> = {}): string {
    return catalogue.text(this.language, `message.${key}`, params);
  }

  /** As plain text (subject, text part, SMS): isolated in right-to-left text, as is otherwise. */
  text(words: string): string {
    return words.replace(marks, (_, index: string) => {
      const { value, kind } = this.inserted[Number(index)]!;
      if (!this.rtl) return value;
      return `${kind === 'auto' ? firstStrongIsolate : leftToRightIsolate}${value}${popIsolate}`;
    });
  }

  /** As HTML: escaped, the code stood out (and kept left to right), other values isolated in RTL. */
  html(words: string): string {
    return escapeHtml(words).replace(marks, (_, index: string) => {
      const { value, kind } = this.inserted[Number(index)]!;
      if (kind === 'code')
        return `<strong${this.rtl ? ' dir="ltr"' : ''} style="font-size:1.4em;letter-spacing:0.2em${this.codeColour === null ? '' : `;color:${this.codeColour}`}">${escapeHtml(value)}</strong>`;
      if (!this.rtl) return escapeHtml(value);
      return `<bdi${kind === 'ltr' ? ' dir="ltr"' : ''}>${escapeHtml(value)}</bdi>`;
    });
  }
}

/** What one email says: its subject, and its lines in the order they are read. */
interface Words {
  subject: string;
  lines: string[];
}

/** What the words are made from, worked out once from the input. */
interface WordsContext {
  w: Wording;
  /** The values every message may name: the store, the code, the channel's word for the identity. */
  params: { store: string; code: string; identity: string };
  lifetimeMinutes: number;
  input: TemplateInput;
}

const expiry = ({ w, lifetimeMinutes }: WordsContext) => w.say('expiry', { count: lifetimeMinutes });

/** A subject and two lines, one of them the code's expiry. */
const codeWords = (purpose: string) => (c: WordsContext) => ({
  subject: c.w.say(`${purpose}.subject`, c.params),
  lines: [c.w.say(`${purpose}.line1`, c.params), expiry(c), c.w.say(`${purpose}.line2`, c.params)],
});

/** A subject and two lines. */
const noticeWords = (purpose: string) => (c: WordsContext) => ({
  subject: c.w.say(`${purpose}.subject`, c.params),
  lines: [c.w.say(`${purpose}.line1`, c.params), c.w.say(`${purpose}.line2`, c.params)],
});

// The GSM 03.38 alphabet an SMS is sent in when every character of it has a place there (160 to a
// part), with its extension table (each character two septets); any other character (an Arabic
// letter, a bullet, an isolate) makes the whole text UCS-2, 70 UTF-16 units to a part.
const gsmBasic = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
const gsmExtension = new Set('^{}\\[~]|€\f');

/** Whether a text goes as one SMS part: 160 GSM-7 septets, or 70 UTF-16 units as UCS-2. */
export function fitsOneSmsPart(text: string): boolean {
  let septets = 0;
  for (const character of text) {
    if (gsmBasic.has(character)) septets += 1;
    else if (gsmExtension.has(character)) septets += 2;
    else return text.length <= 70;
  }
  return septets <= 160;
}

/**
 * The new sign-in SMS names the device and the network, and the identity-changed SMS the new
 * number (masked), when that still fits one part (a short store name; in Arabic, rarely);
 * otherwise it leaves the email's details out and only warns.
 */
function smsWithDetails({ w, params, input }: WordsContext, short: string): string {
  let details: Record<string, string>;
  if (input.purpose === 'new_sign_in' && input.signIn !== undefined)
    details = { device: w.insert(input.signIn.device), network: w.insert(input.signIn.address, 'ltr') };
  else if (input.purpose === 'identity_changed' && input.maskedIdentity !== undefined)
    // GSM-7 has no bullet: one would make the whole SMS UCS-2, 70 to a part, so the mask is `*`.
    details = { new_identity: w.insert(input.maskedIdentity.replaceAll('•', '*'), 'ltr') };
  else return short;
  const detailed = w.text(w.say(`sms.${input.purpose}_detailed`, { ...params, ...details }));
  return fitsOneSmsPart(detailed) ? detailed : short;
}

/** The words of each email. No links: nothing here is built from a request's Host header. */
const wordsOf: { [P in MessagePurpose]: (context: WordsContext) => Words } = {
  verification: codeWords('verification'),
  password_reset: codeWords('password_reset'),
  // Sent unasked (an import brought the account without a password): it says where the code goes,
  // in the page's own words for the buttons, and until when it works.
  invitation: ({ w, params, input }) => ({
    subject: w.say('invitation.subject', params),
    lines: [
      w.say('invitation.line1', {
        ...params,
        forgot: catalogue.text(w.language, 'page.nav.forgot'),
        have_code: catalogue.text(w.language, 'page.forgot.have_code'),
      }),
      w.say('invitation.expiry', { until: w.insert(formatWhen(input.code?.expiresAt ?? new Date(0)), 'ltr') }),
      w.say('invitation.line2', params),
    ],
  }),
  sign_in: codeWords('sign_in'),
  identity_change: codeWords('identity_change'),
  password_changed: ({ w, params, input }) => ({
    subject: w.say('password_changed.subject', params),
    lines: [
      w.say(
        input.signedOut === 'other_devices'
          ? 'password_changed.line1_other_devices'
          : 'password_changed.line1_every_device',
        params,
      ),
      w.say('not_you_reset'),
    ],
  }),
  new_sign_in: ({ w, params, input }) => {
    const signIn = input.signIn!;
    return {
      subject: w.say('new_sign_in.subject', params),
      lines: [
        w.say('new_sign_in.line1', {
          ...params,
          when: w.insert(formatWhen(signIn.at), 'ltr'),
          device: w.insert(signIn.device),
          network: w.insert(signIn.address, 'ltr'),
        }),
        w.say('not_you_reset'),
        w.say('new_sign_in.line3'),
      ],
    };
  },
  account_deleted: noticeWords('account_deleted'),
  identity_taken: noticeWords('identity_taken'),
  passkey_added: noticeWords('passkey_added'),
  two_factor_on: noticeWords('two_factor_on'),
  two_factor_off: noticeWords('two_factor_off'),
  recovery_code_used: noticeWords('recovery_code_used'),
  provider_linked: noticeWords('provider_linked'),
  identity_changed: ({ w, params, input }) => ({
    subject: w.say('identity_changed.subject', params),
    lines: [
      w.say('identity_changed.line1', {
        ...params,
        new_identity:
          input.maskedIdentity === undefined
            ? w.say(input.channel === 'email' ? 'identity.another_email' : 'identity.another_phone')
            : w.insert(input.maskedIdentity, 'ltr'),
      }),
      w.say('identity_changed.line2', params),
    ],
  }),
};

/**
 * The values a store's own template of the message may show (message-templates.ts), in the
 * message's language where they are words.
 */
export function templateValues(input: TemplateInput): Record<string, string> {
  const w = new Wording(input.language);
  const values: Record<string, string> = { store_name: input.storeName };
  if (input.code !== undefined) {
    values['code'] = input.code.value;
    values['minutes'] = String(input.code.lifetimeMinutes);
    if (input.code.expiresAt !== undefined) values['until'] = formatWhen(input.code.expiresAt);
  }
  if (input.signedOut !== undefined)
    values['signed_out'] = w.text(
      w.say(
        input.signedOut === 'other_devices'
          ? 'password_changed.line1_other_devices'
          : 'password_changed.line1_every_device',
        { store: w.insert(input.storeName) },
      ),
    );
  if (input.signIn !== undefined) {
    values['when'] = formatWhen(input.signIn.at);
    values['device'] = input.signIn.device;
    values['network'] = input.signIn.address;
  }
  if (input.maskedIdentity !== undefined) values['new_identity'] = input.maskedIdentity;
  if (input.purpose === 'two_factor_on' || input.purpose === 'two_factor_off')
    values['change'] = w.text(w.say(`${input.purpose}.line1`, { store: w.insert(input.storeName) }));
  values['support_url'] = input.branding?.supportUrl ?? '';
  if (input.code === undefined) {
    values['logo_url'] = input.branding?.logoUrl ?? '';
    values['customer_name'] = input.customerName ?? '';
  }
  return values;
}

/**
 * The words of every message, in the input's language, or in the store's own template of an email
 * when it has one: an SMS (one line of its own, short enough
 * for one part: 160 characters in English, 70 in a script that needs UCS-2, for a store name of up
 * to 20), or an email (a subject, text and HTML).
 */
export function renderMessage(input: TemplateInput, template: MessageTemplate | null = null): MessageContent {
  if (template !== null && input.channel === 'email')
    return renderTemplate(template, input.language, templateValues(input));
  const branding = input.branding ?? { logoUrl: null, primaryColour: null, supportUrl: null };
  const w = new Wording(input.language, branding.primaryColour);
  const code = input.code?.value ?? '';
  const lifetimeMinutes = input.code?.lifetimeMinutes ?? 0;
  const context: WordsContext = {
    w,
    params: {
      store: w.insert(input.storeName),
      code: w.insert(code, 'code'),
      identity: w.say(input.channel === 'email' ? 'identity.email' : 'identity.phone'),
    },
    lifetimeMinutes,
    input,
  };
  const { subject, lines } = wordsOf[input.purpose](context);
  const language = input.language;
  if (input.channel === 'sms') {
    // An invitation lives for days, the other codes for minutes.
    const expiry =
      input.purpose === 'invitation'
        ? w.say('sms.expiry_days', { count: Math.floor(lifetimeMinutes / (24 * 60)) })
        : w.say('sms.expiry', { count: lifetimeMinutes });
    const sms = w.text(w.say(`sms.${input.purpose}`, { ...context.params, expiry }));
    return { language, subject: w.text(subject), text: smsWithDetails(context, sms), html: '' };
  }
  // No name in the greeting: see TemplateInput.
  const greeting = w.say('greeting');
  const signature = w.say('signature', { store: context.params.store });
  const direction = catalogue.direction(language);
  // The store's support link closes every email; its logo heads its notices, never a code's email
  // (no remote image where a code is read at once: a tracker, a slow host).
  const help = branding.supportUrl === null ? null : w.say('support', { store: context.params.store });
  const logo =
    branding.logoUrl === null || input.code !== undefined
      ? []
      : [`<p><img src="${escapeHtml(branding.logoUrl)}" alt="${escapeHtml(input.storeName)}" height="48"></p>`];
  return {
    language,
    subject: w.text(subject),
    text: [greeting, '', ...lines, '', signature, ...(help === null ? [] : ['', `${help}: ${branding.supportUrl}`])]
      .map((line) => w.text(line))
      .join('\n'),
    html: [
      `<!doctype html><html lang="${escapeHtml(language)}" dir="${direction}"><body style="font-family:sans-serif">`,
      ...logo,
      ...[greeting, ...lines, signature].map((line) => `<p>${w.html(line)}</p>`),
      ...(help === null ? [] : [`<p><a href="${escapeHtml(branding.supportUrl!)}">${w.html(help)}</a></p>`]),
      '</body></html>',
    ].join('\n'),
  };
}
