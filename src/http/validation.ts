import AjvModule, { type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { type ErrorDetail, excerpt } from '../errors.js';

// Both packages are CommonJS with a `default` export; this is the interop NodeNext needs.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

function newAjv(coerceTypes: boolean): AjvModule.default {
  const instance = new Ajv({
    coerceTypes,
    useDefaults: true,
    // Unknown fields are refused (400), never silently dropped.
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  addFormats(instance);
  instance.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  return instance;
}

// Nothing is coerced by Ajv: bodies are JSON and keep their types ("1" is not a categoryId).
const ajv = newAjv(false);

// Query strings and path parameters are text by nature, so integers arrive as strings. Only
// plain decimal digits become numbers; Ajv's own coercion would also take "0x8", "8e0", " 8"
// and "+8", making one object answer at many URLs.
const DECIMAL = /^-?(0|[1-9][0-9]{0,17})$/;

type Field = { type?: unknown; items?: { type?: unknown } };

function fieldsOf(schema: object, match: (field: Field) => boolean): string[] {
  const properties = (schema as { properties?: Record<string, Field> }).properties;
  return Object.entries(properties ?? {})
    .filter(([, field]) => match(field))
    .map(([name]) => name);
}

const integerFields = (schema: object) => fieldsOf(schema, (f) => f.type === 'integer');
/** Lists of integers in a query string (`?id=1&id=7`): one value arrives as a string alone. */
const integerListFields = (schema: object) =>
  fieldsOf(schema, (f) => f.type === 'array' && f.items?.type === 'integer');

const toInteger = (value: unknown) =>
  typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value;

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const validate = ajv.compile(schema);
  const integers = httpPart === 'body' ? [] : integerFields(schema);
  const lists = httpPart === 'querystring' ? integerListFields(schema) : [];
  if (integers.length === 0 && lists.length === 0) return validate;
  // Fastify reads `.errors` from the function it was given after a `false`.
  const validateText = Object.assign(
    (data: Record<string, unknown>) => {
      for (const name of integers) {
        if (typeof data[name] === 'string') data[name] = toInteger(data[name]);
      }
      for (const name of lists) {
        const value = data[name];
        if (value === undefined) continue;
        data[name] = (Array.isArray(value) ? value : [value]).map(toInteger);
      }
      const valid = validate(data);
      validateText.errors = validate.errors;
      return valid;
    },
    { errors: null as typeof validate.errors },
  );
  return validateText;
};

/**
 * A value checked against a schema under the body rules (no coercion), with the problems in
 * the words the API uses: for values that arrive outside a route's own body schema, such as
 * the portal's form fields. Empty when the value is valid.
 */
export function checkBody(schema: object, value: unknown): ErrorDetail[] {
  const validate = ajv.compile(schema);
  return validate(value) ? [] : describeValidation(validate.errors ?? [], 'body');
}

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
      // The client's own field name: repeated, but never at length.
      const extra = excerpt(String(e.params.additionalProperty), 64);
      return { location: join(part, field, extra), message: `unknown field "${extra}"` };
    }
    if (e.keyword === 'required') {
      const missing = String(e.params.missingProperty);
      return { location: join(part, field, missing), message: 'is required' };
    }
    if (e.keyword === 'pattern') {
      return {
        location: join(part, field),
        message: 'must not be blank or contain control or bidirectional-control characters',
      };
    }
    if (e.keyword === 'minLength' || e.keyword === 'maxLength') {
      const limit = Number(e.params.limit);
      const bound = e.keyword === 'minLength' ? 'at least' : 'at most';
      const unit = limit === 1 ? 'character' : 'characters';
      return { location: join(part, field), message: `must be ${bound} ${limit} ${unit} long` };
    }
    if (e.keyword === 'enum') {
      const allowed = (e.params.allowedValues as unknown[]).map(String).join(', ');
      return { location: join(part, field), message: `must be one of: ${allowed}` };
    }
    if (e.keyword === 'format' && e.params.format === 'email') {
      return { location: join(part, field), message: 'must be an email address' };
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
