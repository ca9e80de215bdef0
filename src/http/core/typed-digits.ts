import { asciiDigits } from '../../auth/rules/digits.js';

/**
 * A schema keyword for fields people type digits into (the six-digit codes): `[typedDigits]: true`
 * reads Arabic-Indic and Extended Arabic-Indic digits as ASCII digits before the field's other
 * rules (its `pattern`) judge it, so a route's schema says in one place that a code typed on an
 * Arabic keyboard is the same code. The name is an OpenAPI extension, so the published document
 * carries it as it is.
 */
export const typedDigits = 'x-typed-digits';

interface DataContext {
  parentData: Record<string | number, unknown>;
  parentDataProperty: string | number;
}

interface KeywordHost {
  addKeyword(definition: {
    keyword: string;
    type: 'string';
    schemaType: 'boolean';
    modifying: true;
    before: string;
    errors: false;
    validate: (on: boolean, data: string, parentSchema: unknown, context?: DataContext) => boolean;
  }): unknown;
}

/** The validator plugin that defines the keyword (for Fastify's `ajv.plugins`). */
export function typedDigitsKeyword<Validator extends KeywordHost>(ajv: Validator): Validator {
  ajv.addKeyword({
    keyword: typedDigits,
    type: 'string',
    schemaType: 'boolean',
    // Rewrites the value in its parent, then `pattern` and the handler see the ASCII form.
    modifying: true,
    before: 'pattern',
    errors: false,
    validate: (on, data, _parentSchema, context) => {
      if (on && context !== undefined) context.parentData[context.parentDataProperty] = asciiDigits(data);
      return true;
    },
  });
  return ajv;
}
