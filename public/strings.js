// The page's words in its language. The server embeds the `page` strings of the language it chose
// as a JSON data block (<script type="application/json" id="strings">, never run, so the CSP holds)
// and says the language in <html lang dir>. Same format as the files under locales/: `{name}`
// placeholders, and plural forms keyed by Intl.PluralRules categories with `{count}`.

const strings = JSON.parse(document.getElementById('strings').textContent);

/** The page's language (a tag like `ar`), as the server chose it; API calls ask for it too. */
export const language = document.documentElement.lang || 'en';
const rtl = document.documentElement.dir === 'rtl';
const plurals = new Intl.PluralRules(language);
// `identity.*` are the texts of the store's identity mode: `email.*` or `phone.*`.
const mode = document.body.dataset.identityMode === 'phone' ? 'phone' : 'email';

function template(key, count) {
  let value = strings;
  for (const part of key.replace(/^identity\./, `${mode}.`).split('.')) value = value?.[part];
  if (value !== null && typeof value === 'object' && typeof value.other === 'string')
    return value[plurals.select(count)] ?? value.other;
  // A key the strings lack is a bug; showing the key keeps the page usable and the bug visible.
  return typeof value === 'string' ? value : key;
}

// In right-to-left text an inserted value (an email, a name, a number) is isolated, so its own
// direction cannot reorder the sentence around it (FSI … PDI; LRI … PDI for values always LTR).
const isolate = (value) => (rtl && !value.startsWith('\u2066') ? `\u2068${value}\u2069` : value);

/** A value that reads left to right whatever the page's direction: an email, a phone number, a code. */
export const ltr = (value) => (rtl ? `\u2066${value}\u2069` : String(value));

/** The text of `key` with its `{name}` placeholders filled; `params.count` picks a plural form. */
export function t(key, params = {}) {
  return template(key, params.count).replace(/\{(\w+)\}/g, (whole, name) =>
    params[name] === undefined ? whole : isolate(String(params[name])),
  );
}

/**
 * The text of `key` as nodes to append: a Node given for a placeholder goes in as it is, any other
 * value in a <bdi> (isolated, like t's values).
 */
export function tNodes(key, params = {}) {
  const parts = template(key, params.count).split(/\{(\w+)\}/);
  return parts.map((part, index) => {
    if (index % 2 === 0) return part;
    const value = params[part];
    if (value === undefined) return `{${part}}`;
    if (value instanceof Node) return value;
    const bdi = document.createElement('bdi');
    bdi.textContent = String(value);
    return bdi;
  });
}
