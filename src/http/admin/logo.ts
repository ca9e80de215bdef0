import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { checkedLogo, deleteLogo, logoTypes, maxLogoBytes, saveLogo, uploadedLogoUrl } from '../../store/logos.js';
import { describeStore, FieldError } from '../../store/fields.js';
import { updateStore } from '../../store/store.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import { adminCaller, adminStoreKit, countAdminCalls, StoreParams, storeProblems, withBody } from './admin-kit.js';
import { Store } from './store-schemas.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'keys' | 'store' | 'limiter' | 'audit'>;

/** A store's uploaded logo, on the admin listener: the image itself, kept in the database. */
export function logoRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, limiter } = services;
  const { storeNamed, audit } = adminStoreKit(services);

  /** Points the store's branding at the upload (or at nothing), bumping its version for every instance. */
  async function brandWith(storeId: string, logoUrl: string | null) {
    const result = await updateStore(db, clock, { branding: { logoUrl } }, { store: storeId });
    if (!result.ok) throw new ProblemError('store_not_found');
    services.store.invalidate();
    return describeStore(result.store);
  }

  return async (app) => {
    countAdminCalls(app, limiter);
    // The image is the body, as sent; its type and bytes are checked below.
    app.addContentTypeParser(logoTypes, { parseAs: 'buffer', bodyLimit: maxLogoBytes }, (_request, body, done) =>
      done(null, body),
    );

    app.put(
      '/stores/:id/logo',
      declareRoute({
        operationId: 'uploadStoreLogo',
        summary: "Upload a store's logo",
        description: `The image as the body, \`Content-Type\` one of ${logoTypes.join(', ')} (no SVG: it can hold script), at most ${maxLogoBytes / 1024} KiB; its first bytes must be of that type. Kept in the database and served at \`/brand/logo\` on the store's hosts; the store's \`branding.logo_url\` becomes that path, versioned by the image's digest. Recorded as \`store.changed\` with \`logo_uploaded\`.`,
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: [...withBody, ...storeProblems],
        answer: Store,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        if (!Buffer.isBuffer(request.body))
          throw new ProblemError('unsupported_media_type', {}, {}, `A logo is sent as ${logoTypes.join(', ')}.`);
        let logo;
        try {
          logo = checkedLogo(String(request.headers['content-type']), request.body);
        } catch (error) {
          if (error instanceof FieldError)
            throw new ProblemError('validation_failed', { errors: { logo: [error.message] } });
          throw error;
        }
        await saveLogo(db, store.id, logo, clock.now());
        audit(request, store.id, 'store.changed', { logo_uploaded: logo.digest });
        return brandWith(store.id, uploadedLogoUrl(logo.digest));
      },
    );

    app.delete(
      '/stores/:id/logo',
      declareRoute({
        operationId: 'removeStoreLogo',
        summary: "Remove a store's uploaded logo",
        description:
          "The image is deleted, and the store's `branding.logo_url` with it when it named the upload. Recorded as `store.changed` with `logo_removed`.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: [...storeProblems, 'not_found'],
        answer: Store,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        if (!(await deleteLogo(db, store.id)))
          throw new ProblemError('not_found', {}, {}, 'The store has no uploaded logo.');
        audit(request, store.id, 'store.changed', { logo_removed: store.slug });
        const named = store.branding.logoUrl?.startsWith('/') === true;
        return named ? brandWith(store.id, null) : describeStore(store);
      },
    );
  };
}
