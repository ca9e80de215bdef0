/**
 * `npm run check:strings` (part of `npm test`): every language file under locales/ holds exactly
 * English's keys, with the same placeholders and the plural forms its language needs.
 *
 *   node --import tsx scripts/check-strings.ts [locales folder]
 */
import { checkCatalogue } from '../src/i18n/check.js';
import { Catalogue } from '../src/i18n/strings.js';

const catalogue = Catalogue.read(process.argv[2]);
const problems = checkCatalogue(catalogue);
for (const problem of problems) console.error(problem);
if (problems.length > 0) process.exit(1);
console.log(`strings: ${catalogue.languages.join(', ')} complete`);
