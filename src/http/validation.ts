import AjvModule, { type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { ErrorDetail } from '../errors.js';

// Both packages are CommonJS with a `default` export; this is the interop NodeNext needs.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

function newAjv(coerceTypes: boolean): AjvModule.default {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    // Unknown fields are refused (400), never silently dropped.
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  addFormats(ajv);
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  return ajv;
}

// Bodies are JSON and keep their types: "1" is not a categoryId. Query strings and path
// parameters are text by nature, so they are coerced ("20" → 20).
const bodyAjv = newAjv(false);
const textAjv = newAjv(true);

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);

const PART: Record<string, string> = { querystring: 'query', params: 'path', body: 'body' };

/** Ajv's findings as client-facing details: where, and what is wrong in plain words. */
export function describeValidation(
  errors: ErrorObject[],
  context: string | undefined,
): ErrorDetail[] {
  const part = PART[context ?? ''] ?? context ?? 'request';
  return errors.map((e) => {
    const field = e.instancePath.replace(/^\//, '');
    if (e.keyword === 'additionalProperties') {
      const extra = String(e.params.additionalProperty);
      return { location: join(part, field, extra), message: `unknown field "${extra}"` };
    }
    if (e.keyword === 'required') {
      const missing = String(e.params.missingProperty);
      return { location: join(part, field, missing), message: 'is required' };
    }
    if (e.keyword === 'pattern') {
      return {
        location: join(part, field),
        message: 'must not be blank or contain control characters',
      };
    }
    if (e.keyword === 'type' && field === '' && part === 'body') {
      return { location: part, message: 'must be a JSON object' };
    }
    return { location: join(part, field), message: e.message ?? 'is invalid' };
  });
}

function join(...parts: string[]): string {
  return parts.filter((p) => p !== '').join('/');
}
