import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  renderTemplate,
  sampleValues,
  templatedMessageNames,
  templatedMessages,
  templateProblems,
  type MessageTemplate,
  type TemplatedMessage,
} from '../../delivery/message-templates.js';
import { deleteTemplate, findTemplate, listTemplates, saveTemplate } from '../../delivery/store-templates.js';
import { forStore } from '../../storage/database.js';
import type { StoreContext } from '../../store/store.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import { adminCaller, adminStoreKit, countAdminCalls, storeProblems, withBody } from './admin-kit.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'keys' | 'store' | 'limiter' | 'audit'>;

const variablesText = templatedMessageNames
  .map((name) => `\`${name}\`: ${Object.keys(templatedMessages[name].variables).join(', ')}`)
  .join('; ');

const TemplateParams = Type.Object({
  id: Type.String({ description: "The store's id or slug." }),
  message: Type.Union(
    templatedMessageNames.map((name) => Type.Literal(name)),
    { description: `The message. Its variables: ${variablesText}.` },
  ),
  language: Type.String({ description: 'One of the store’s languages (`en`, `ar`, …).' }),
});
const StoreOnly = Type.Object({ id: Type.String({ description: "The store's id or slug." }) });

const TemplateBody = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: 1000, description: 'One line; at most 200 characters rendered.' }),
    text: Type.String({ minLength: 1, maxLength: 20_000, description: 'The plain-text part.' }),
    html: Type.String({
      minLength: 1,
      maxLength: 100_000,
      description: "The HTML part's body: the service puts it in a document of the message's language and direction.",
    }),
  },
  {
    additionalProperties: false,
    description:
      'Mustache: `{{variable}}` only (escaped in the HTML part; no `{{{…}}}`, `{{&…}}`, sections or partials). A code message must show `{{code}}` in both bodies, and its HTML loads no remote image.',
  },
);
const Rendered = Type.Object({ subject: Type.String(), text: Type.String(), html: Type.String() });
const StoredTemplate = Type.Object({
  message: Type.String(),
  language: Type.String(),
  subject: Type.String(),
  text: Type.String(),
  html: Type.String(),
  updated_at: Type.String({ format: 'date-time' }),
});
const TemplateList = Type.Object({
  templates: Type.Array(
    Type.Object({ message: Type.String(), language: Type.String(), updated_at: Type.String({ format: 'date-time' }) }),
  ),
});
const Removed = Type.Object({ status: Type.Literal('removed') });

const noTemplate = () =>
  new ProblemError('not_found', {}, {}, 'The store has no template of this message in this language.');

/** The language must be one the store speaks: a template in another would never be sent. */
function checkedLanguage(store: StoreContext, language: string): string {
  if (!store.languages.includes(language))
    throw new ProblemError('validation_failed', {
      errors: { language: [`Is not one of the store's languages (${store.languages.join(', ')}).`] },
    });
  return language;
}

function checkedTemplate(message: TemplatedMessage, template: MessageTemplate): MessageTemplate {
  const problems = templateProblems(message, template);
  if (Object.keys(problems).length > 0) throw new ProblemError('validation_failed', { errors: problems });
  return template;
}

function answerOf(template: Awaited<ReturnType<typeof saveTemplate>>) {
  const { message, language, subject, text, html, updatedAt } = template;
  return { message, language, subject, text, html, updated_at: updatedAt };
}

/** A store's own words for its emails, per message and language, on the admin listener. */
export function templateRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, limiter } = services;
  const { storeNamed, audit } = adminStoreKit(services);
  const path = '/stores/:id/templates/:message/:language';

  return async (app) => {
    countAdminCalls(app, limiter);

    app.get(
      '/stores/:id/templates',
      declareRoute({
        operationId: 'listStoreTemplates',
        summary: "A store's message templates",
        description:
          'Which messages the store words itself, in which languages; every other message is sent in the built-in words.',
        tag: 'stores',
        bearer: adminCaller,
        params: StoreOnly,
        problems: [...storeProblems],
        answer: TemplateList,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const templates = await listTemplates(forStore(db, store.id));
        return {
          templates: templates.map(({ message, language, updatedAt }) => ({
            message,
            language,
            updated_at: updatedAt,
          })),
        };
      },
    );

    app.put(
      path,
      declareRoute({
        operationId: 'setStoreTemplate',
        summary: "Set a store's template of a message",
        description:
          "From the next message queued, the store's emails of this message in this language use it (SMS keep the built-in words). Checked first: a syntax error, a tag other than a plain `{{variable}}`, a variable the message does not have, a code message without `{{code}}`, a remote image in a code message's HTML, or a subject over one line or 200 characters is a 422 naming the part, the line and the variable. Recorded as `store.changed` with `template_set`.",
        tag: 'stores',
        bearer: adminCaller,
        params: TemplateParams,
        body: TemplateBody,
        problems: [...withBody, ...storeProblems],
        answer: StoredTemplate,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const { message } = request.params;
        const language = checkedLanguage(store, request.params.language);
        const template = checkedTemplate(message, request.body);
        const saved = await saveTemplate(forStore(db, store.id), message, language, template, clock.now());
        audit(request, store.id, 'store.changed', { template_set: `${message}/${language}` });
        return answerOf(saved);
      },
    );

    app.get(
      path,
      declareRoute({
        operationId: 'getStoreTemplate',
        summary: "A store's template of a message",
        description: 'As saved; 404 while the message is sent in the built-in words.',
        tag: 'stores',
        bearer: adminCaller,
        params: TemplateParams,
        problems: [...storeProblems, 'not_found'],
        answer: StoredTemplate,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const found = await findTemplate(forStore(db, store.id), request.params.message, request.params.language);
        if (found === null) throw noTemplate();
        return answerOf(found);
      },
    );

    app.delete(
      path,
      declareRoute({
        operationId: 'removeStoreTemplate',
        summary: "Remove a store's template of a message",
        description:
          'The built-in words return from the next message queued. Recorded as `store.changed` with `template_removed`.',
        tag: 'stores',
        bearer: adminCaller,
        params: TemplateParams,
        problems: [...storeProblems, 'not_found'],
        answer: Removed,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const { message, language } = request.params;
        if (!(await deleteTemplate(forStore(db, store.id), message, language))) throw noTemplate();
        audit(request, store.id, 'store.changed', { template_removed: `${message}/${language}` });
        return { status: 'removed' as const };
      },
    );

    app.post(
      `${path}/preview`,
      declareRoute({
        operationId: 'previewStoreTemplate',
        summary: "Preview a store's template of a message",
        description:
          "The subject and both parts of the template in the body as a shopper would get them, with sample values (and the store's own name, support link and logo where it has them), checked as a save checks it. Nothing is saved or sent.",
        tag: 'stores',
        bearer: adminCaller,
        params: TemplateParams,
        body: TemplateBody,
        problems: [...withBody, ...storeProblems],
        answer: Rendered,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const { message } = request.params;
        const language = checkedLanguage(store, request.params.language);
        const template = checkedTemplate(message, request.body);
        const values = sampleValues(message);
        const { logoUrl, supportUrl } = store.mailBranding;
        const own = { store_name: store.name, support_url: supportUrl, logo_url: logoUrl };
        for (const [name, value] of Object.entries(own))
          if (Object.hasOwn(values, name) && value !== null) values[name] = value;
        const { subject, text, html } = renderTemplate(template, language, values);
        return { subject, text, html };
      },
    );
  };
}
