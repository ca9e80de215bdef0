import Mustache from 'mustache';
import { catalogue } from '../i18n/strings.js';
import type { MessageContent, MessagePurpose } from './message.js';

/**
 * A store's own words for its emails: Mustache templates (logic-less), checked when saved and
 * rendered with the message's values when it is queued. Only plain `{{variable}}` tags are taken:
 * the triple-brace and `{{&…}}` forms would insert a value unescaped into the HTML, and sections,
 * partials and delimiter changes are logic a message does not need. Every variable is a value of
 * the service's or the store's own (its name and links, a code, a masked address), but one: a
 * proven customer's name, in a notice's body only (see TemplateInput).
 */

// Parsed templates are not kept: a deployment of many stores would keep every store's, and
// parsing one is cheaper than the statement that read it.
Mustache.templateCache = undefined;

export interface TemplateVariable {
  description: string;
  /** What a preview renders in its place. */
  sample: string;
}

const storeName: TemplateVariable = { description: "The store's name.", sample: 'Corner Shop' };
const code: TemplateVariable = { description: 'The six-digit code.', sample: '482913' };
const minutes: TemplateVariable = { description: 'How many minutes the code works.', sample: '10' };
const supportUrl: TemplateVariable = {
  description: "The store's support link (`branding.support_url`); empty when it has none.",
  sample: 'https://corner.example/help',
};
// Only in notices: a code's email loads no remote image.
const logoUrl: TemplateVariable = {
  description:
    "The store's logo (`branding.logo_url`, an upload as an address on the store's first host); empty when it has none.",
  sample: 'https://corner.example/brand/logo?v=3f2a9c0d1e4b5a67',
};
/** Variables that are addresses: never set apart with direction marks, which would break them. */
export const addressVariables = new Set(['support_url', 'logo_url']);

// Only in notices, and never in a subject: the one value a customer chose (see TemplateInput).
const customerName: TemplateVariable = {
  description:
    "The customer's name as they gave it (escaped in the HTML part); empty until their email or phone is proven. Not allowed in a subject.",
  sample: 'Ada',
};

const codeMessage = (purpose: MessagePurpose) =>
  ({
    purposes: [purpose],
    code: true,
    variables: { store_name: storeName, code, minutes, support_url: supportUrl },
  }) as const;
const notice = (purposes: MessagePurpose[], variables: Record<string, TemplateVariable> = {}) =>
  ({
    purposes,
    code: false,
    variables: {
      store_name: storeName,
      customer_name: customerName,
      ...variables,
      support_url: supportUrl,
      logo_url: logoUrl,
    },
  }) as const;

/** Every message a store may word itself, by the name the admin API gives it. */
export const templatedMessages = {
  verification_code: codeMessage('verification'),
  reset_code: codeMessage('password_reset'),
  sign_in_code: codeMessage('sign_in'),
  identity_change_code: codeMessage('identity_change'),
  invitation: {
    purposes: ['invitation'],
    code: true,
    variables: {
      store_name: storeName,
      code,
      until: { description: 'Until when the invitation works (UTC).', sample: '2026-12-05 10:00 UTC' },
      support_url: supportUrl,
    },
  },
  password_changed: notice(['password_changed'], {
    signed_out: {
      description:
        'The sentence that says the password changed and which devices were signed out, in the message’s language.',
      sample: 'The password of your Corner Shop account was just changed, and every other device was signed out.',
    },
  }),
  new_sign_in: notice(['new_sign_in'], {
    when: { description: 'When (UTC).', sample: '2026-11-29 07:50 UTC' },
    device: { description: 'The browser and system, in a few words.', sample: 'Firefox on Windows' },
    network: { description: 'The network the sign-in came from, masked.', sample: '203.0.113.0/24' },
  }),
  identity_changed: notice(['identity_changed'], {
    new_identity: { description: 'The account’s new email or phone, masked.', sample: 'a•••@example.org' },
  }),
  identity_taken: notice(['identity_taken']),
  account_deleted: notice(['account_deleted']),
  passkey_added: notice(['passkey_added']),
  provider_linked: notice(['provider_linked']),
  // One template for both ways: `change` says which, in the message's language.
  two_factor_changed: notice(['two_factor_on', 'two_factor_off'], {
    change: {
      description: 'The sentence that says two-step sign-in was turned on or off, in the message’s language.',
      sample:
        'Two-step sign-in was just turned on for your Corner Shop account: signing in with your password now also takes a code from your authenticator app.',
    },
  }),
  recovery_code_used: notice(['recovery_code_used']),
} as const satisfies Record<
  string,
  { purposes: readonly MessagePurpose[]; code: boolean; variables: Record<string, TemplateVariable> }
>;

export type TemplatedMessage = keyof typeof templatedMessages;
export const templatedMessageNames = Object.keys(templatedMessages) as TemplatedMessage[];

/** The admin API's name of a message the service sends. */
export function templateNameOf(purpose: MessagePurpose): TemplatedMessage {
  return templatedMessageNames.find((name) =>
    (templatedMessages[name].purposes as readonly MessagePurpose[]).includes(purpose),
  )!;
}

export interface MessageTemplate {
  subject: string;
  text: string;
  html: string;
}

export type TemplatePart = keyof MessageTemplate;

/** A subject is one line of at most this many characters, rendered. */
export const maxSubjectLength = 200;

type Token = [type: string, value: string, start: number, end: number, ...rest: unknown[]];

function lineAt(source: string, offset: number): number {
  return source.slice(0, offset).split('\n').length;
}

/** What is wrong with one part of a template, each problem naming its line. */
function partProblems(message: TemplatedMessage, part: TemplatePart, source: string): string[] {
  const allowed = templatedMessages[message].variables as Record<string, TemplateVariable>;
  let tokens: Token[];
  try {
    tokens = Mustache.parse(source) as Token[];
  } catch (error) {
    // Mustache says where: "Unclosed tag at 7".
    const at = /at (\d+)$/.exec((error as Error).message);
    const where = at === null ? '' : `line ${lineAt(source, Number(at[1]))}: `;
    return [`${where}${(error as Error).message.replace(/ at \d+$/, '')}.`];
  }
  const problems: string[] = [];
  for (const [type, value, start] of tokens) {
    const line = lineAt(source, start);
    if (type === 'text' || type === '!') continue;
    if (type !== 'name') {
      problems.push(`line ${line}: only {{variable}} tags are taken; {{${type}${value}}} is not.`);
      continue;
    }
    if (!Object.hasOwn(allowed, value))
      problems.push(
        `line ${line}: unknown variable {{${value}}}; this message has ${Object.keys(allowed).join(', ')}.`,
      );
  }
  if (part === 'subject' && source.includes('\n')) problems.push('line 2: a subject is one line.');
  const names = tokens.filter(([type]) => type === 'name').map(([, value]) => value);
  const named = tokens.find(([type, value]) => type === 'name' && value === 'customer_name');
  if (part === 'subject' && named !== undefined)
    problems.push(
      `line ${lineAt(source, named[2])}: {{customer_name}} is the customer's own text and stays out of the subject.`,
    );
  if (templatedMessages[message].code && part !== 'subject' && !names.includes('code'))
    problems.push('line 1: a message that carries a code must show it: {{code}} is missing.');
  // A code's email is read at once, often on a phone: no remote image (a tracker, a slow host) in it.
  if (templatedMessages[message].code && part === 'html' && /\bsrc\s*=\s*["']?\s*(?:https?:)?\/\//i.test(source))
    problems.push(`line ${lineAt(source, source.search(/\bsrc\s*=/i))}: a code's email loads no remote image.`);
  return problems;
}

/**
 * The problems of a template, by part (empty when it may be saved): a syntax error, a tag that is
 * not a plain variable, a variable the message does not have, a code message without its code, a
 * subject over one line or over 200 characters with the sample values.
 */
export function templateProblems(
  message: TemplatedMessage,
  template: MessageTemplate,
): Partial<Record<TemplatePart, string[]>> {
  const problems: Partial<Record<TemplatePart, string[]>> = {};
  for (const part of ['subject', 'text', 'html'] as const) {
    const found = partProblems(message, part, template[part]);
    if (found.length > 0) problems[part] = found;
  }
  if (problems.subject === undefined) {
    const rendered = Mustache.render(template.subject, sampleValues(message), {}, { escape: (value: string) => value });
    if (rendered.length > maxSubjectLength)
      problems.subject = [`is ${rendered.length} characters with the sample values; at most ${maxSubjectLength}.`];
  }
  return problems;
}

export function sampleValues(message: TemplatedMessage): Record<string, string> {
  const variables = templatedMessages[message].variables as Record<string, TemplateVariable>;
  return Object.fromEntries(Object.entries(variables).map(([name, variable]) => [name, variable.sample]));
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// In right-to-left text a value keeps its own direction (see templates.ts).
const firstStrongIsolate = '\u2068';
const popIsolate = '\u2069';

/**
 * An email in the store's words: the values set apart in right-to-left languages, escaped in the
 * HTML, which goes inside the service's own document (its language and direction).
 */
export function renderTemplate(
  template: MessageTemplate,
  language: string,
  values: Record<string, string>,
): MessageContent {
  const rtl = catalogue.direction(language) === 'rtl';
  const asIs = { escape: (value: string) => value };
  const isolated = (name: string) => rtl && !addressVariables.has(name);
  const textValues = Object.fromEntries(
    Object.entries(values).map(([name, value]) => [
      name,
      isolated(name) ? `${firstStrongIsolate}${value}${popIsolate}` : value,
    ]),
  );
  const htmlValues = Object.fromEntries(
    Object.entries(values).map(([name, value]) => [
      name,
      isolated(name) ? `<bdi>${escapeHtml(value)}</bdi>` : escapeHtml(value),
    ]),
  );
  const subject = Mustache.render(template.subject, textValues, {}, asIs).slice(0, maxSubjectLength);
  return {
    language,
    subject,
    text: Mustache.render(template.text, textValues, {}, asIs),
    html: [
      `<!doctype html><html lang="${escapeHtml(language)}" dir="${rtl ? 'rtl' : 'ltr'}"><body>`,
      Mustache.render(template.html, htmlValues, {}, asIs),
      '</body></html>',
    ].join('\n'),
  };
}
