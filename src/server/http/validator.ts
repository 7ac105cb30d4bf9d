import type { FastifySchema, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { Ajv, type Options as AjvOptions } from 'ajv';
import { FORMATS } from '../../protocol/index.js';
import { withoutIds } from '../../util/without-ids.js';
import { findIllFormed } from './well-formed.js';

/**
 * The route validators. Bodies are JSON and must not be coerced
 * ({"mtu": "1400"} is an error, not 1400); path and query parameters arrive
 * as strings and are. Ajv coerces "Infinity" and "1e400" to a number that
 * skips `maximum`, so coerced parts are checked again once coerced; bodies
 * were checked as they were parsed (json-body.ts).
 */
export function validatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  const options: AjvOptions = { removeAdditional: false, useDefaults: false, allErrors: false, formats: { ...FORMATS } };
  const bodyAjv = new Ajv({ ...options, coerceTypes: false });
  const partAjv = new Ajv({ ...options, coerceTypes: 'array' });
  return ({ schema, httpPart }) => {
    // The `$id`s name schemas in the OpenAPI document; Ajv would take a repeated one for a conflict.
    const plain = withoutIds(schema) as object;
    if (httpPart === 'body') return bodyAjv.compile(plain);
    const validate = partAjv.compile(plain);
    const checked: ReturnType<FastifySchemaCompiler<FastifySchema>> = (data: unknown) => {
      if (!validate(data)) {
        checked.errors = validate.errors as FastifySchemaValidationError[];
        return false;
      }
      const bad = findIllFormed(data);
      if (bad === undefined) return true;
      checked.errors = [{ keyword: 'wellFormed', instancePath: bad.path, schemaPath: '#', params: {}, message: bad.expected }];
      return false;
    };
    return checked;
  };
}
