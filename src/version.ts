import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// package.json sits at the package root, one level above this file in both src/ and dist/.
export const packageVersion: string = (require('../package.json') as { version: string }).version;
