import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

function fieldOf(error: FastifySchemaValidationError): string {
  if (error.keyword === 'required') return String(error.params['missingProperty']);
  const field = error.instancePath.split('/')[1];
  return field === undefined || field === '' ? 'body' : field;
}

// Our own words for each rule, so no validator library text reaches a client.
function messageOf(error: FastifySchemaValidationError, field: string): string {
  const limit = Number(error.params['limit']);
  switch (error.keyword) {
    case 'required':
      return 'Is required.';
    case 'type':
      return field === 'body' ? 'Must be a JSON object.' : `Must be a ${String(error.params['type'])}.`;
    case 'minLength':
      return limit === 1 ? 'Must not be empty.' : `Must be at least ${limit} characters.`;
    case 'maxLength':
      return `Must be at most ${limit} characters.`;
    case 'pattern':
      return field === 'code' ? 'Must be exactly six digits.' : 'Has the wrong format.';
    default:
      return 'Is invalid.';
  }
}

/** Fastify's schema errors as `errors`: each failing field with its messages. */
export function validationErrors(errors: FastifySchemaValidationError[]): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  for (const error of errors) {
    const field = fieldOf(error);
    const message = messageOf(error, field);
    const messages = (result[field] ??= []);
    if (!messages.includes(message)) messages.push(message);
  }
  return result;
}
