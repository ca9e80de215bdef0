/**
 * `node --import tsx --import ./test/helpers/without-pglite.ts …`: the process runs as on a
 * production install (`npm ci --omit=dev`), where @electric-sql/pglite is not there to be found.
 */
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier === '@electric-sql/pglite' || specifier.startsWith('@electric-sql/pglite/')) {
    const error = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;

register(`data:text/javascript,${encodeURIComponent(hooks)}`);
