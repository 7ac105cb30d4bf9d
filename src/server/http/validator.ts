import type { FastifySchema, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { Ajv, type Options as AjvOptions, type ValidateFunction } from 'ajv';
import { FORMATS } from '../../protocol/index.js';
import { withoutIds } from '../../util/without-ids.js';
import { findIllFormed } from './well-formed.js';

type RouteValidator = ReturnType<FastifySchemaCompiler<FastifySchema>>;

/** Whether a part arrives as JSON (a body, never coerced) or as strings (path, query and headers, coerced). */
export type SchemaPart = 'body' | 'strings';

const options: AjvOptions = { removeAdditional: false, useDefaults: false, allErrors: false, formats: { ...FORMATS } };
const ajvs: Record<SchemaPart, Ajv> = {
  body: new Ajv({ ...options, coerceTypes: false }),
  strings: new Ajv({ ...options, coerceTypes: 'array' }),
};
// Per process, by the route's schema object: the routes' schemas are module constants, so every app
// of a process (the test suite starts hundreds in each worker) compiles each one once.
const compiled: Record<SchemaPart, WeakMap<object, ValidateFunction>> = { body: new WeakMap(), strings: new WeakMap() };

/**
 * Compiles `schema` for `part` now, or returns what this process compiled
 * for that same object before. Throws when Ajv refuses the schema.
 */
export function compileRouteSchema(schema: object, part: SchemaPart): ValidateFunction {
  let validate = compiled[part].get(schema);
  if (validate === undefined) {
    // The `$id`s name schemas in the OpenAPI document; Ajv would take a repeated one for a conflict.
    validate = ajvs[part].compile(withoutIds(schema) as object);
    compiled[part].set(schema, validate);
  }
  return validate;
}

/**
 * The route validators. Bodies are JSON and must not be coerced
 * ({"mtu": "1400"} is an error, not 1400); path and query parameters arrive
 * as strings and are. Ajv coerces "Infinity" and "1e400" to a number that
 * skips `maximum`, so coerced parts are checked again once coerced; bodies
 * were checked as they were parsed (json-body.ts).
 *
 * Each schema is compiled when its route first validates a request, not
 * when the route is registered: compiling every route's schemas took about
 * half a second of each start, most of it for routes a server may never
 * be asked. `eager` compiles each as its route is registered, so a schema
 * Ajv refuses fails the start: what the tests do, to check them all.
 */
export function validatorCompiler(eager = false): FastifySchemaCompiler<FastifySchema> {
  return ({ schema, httpPart }) => {
    const part: SchemaPart = httpPart === 'body' ? 'body' : 'strings';
    let validate: ValidateFunction | undefined = eager ? compileRouteSchema(schema as object, part) : undefined;
    const checked: RouteValidator = (data: unknown) => {
      validate ??= compileRouteSchema(schema as object, part);
      if (!validate(data)) {
        checked.errors = validate.errors as FastifySchemaValidationError[];
        return false;
      }
      if (part === 'body') return true;
      const bad = findIllFormed(data);
      if (bad === undefined) return true;
      checked.errors = [{ keyword: 'wellFormed', instancePath: bad.path, schemaPath: '#', params: {}, message: bad.expected }];
      return false;
    };
    return checked;
  };
}
