import { isDeepStrictEqual } from 'node:util';

/** Where named schemas live in the OpenAPI document. */
const COMPONENTS_PATH = '#/components/schemas/';

type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function idOf(v: Json): string | undefined {
  return isObject(v) && typeof v['$id'] === 'string' ? v['$id'] : undefined;
}


/**
 * The named schemas of the OpenAPI document. The protocol's TypeBox schemas
 * carry an `$id` (their component name); routes use them as they are, so
 * validation and types stay the protocol's, and the document refers to each
 * named schema as `#/components/schemas/<$id>` instead of repeating it.
 */
export class SchemaComponents {
  /** Component name → its schema with nested named schemas as references (filled as routes register). */
  readonly schemas: Record<string, Json> = {};
  readonly #originals = new Map<string, Json>();

  /** Collects the named schemas in a route's schema (Fastify's onRoute). Two different schemas under one name are a bug. */
  collect(schema: Json): void {
    if (Array.isArray(schema)) {
      for (const v of schema) this.collect(v);
      return;
    }
    if (!isObject(schema)) return;
    const id = idOf(schema);
    if (id !== undefined) {
      const known = this.#originals.get(id);
      if (known !== undefined) {
        if (known !== schema && !isDeepStrictEqual(withoutSymbols(known), withoutSymbols(schema))) {
          throw new Error(`two different schemas are named ${id}: give one another $id`);
        }
        return;
      }
      this.#originals.set(id, schema);
    }
    for (const v of Object.values(schema)) this.collect(v);
    // After the nested ones, so that they are references in it.
    if (id !== undefined) this.schemas[id] = this.referenced(Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$id')));
  }

  /** `schema` (a route's, or a part of one) with every named schema in it replaced by a reference to its component. */
  referenced(schema: Json): Json {
    if (Array.isArray(schema)) return schema.map((v) => this.referenced(v));
    if (!isObject(schema)) return schema;
    const id = idOf(schema);
    if (id !== undefined && this.#originals.has(id)) return { $ref: `${COMPONENTS_PATH}${id}` };
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(schema)) if (k !== '$id') out[k] = this.referenced(v);
    return out;
  }
}

/** TypeBox marks its schemas with symbol keys; two equal schemas may differ there only. */
function withoutSymbols(v: Json): Json {
  return JSON.parse(JSON.stringify(v)) as Json;
}
