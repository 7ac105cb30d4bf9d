import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, EVENT_TYPES, HEADERS, MEDIA } from '../../src/protocol/index.js';
import { useServer } from './fixtures.js';
import { ROOT, fetchDocument, type OpenApiDocument, type Operation, type Schema } from './support/openapi-document.js';

const componentOf = (doc: OpenApiDocument, s: Schema | undefined): Schema | undefined =>
  s?.$ref === undefined ? s : doc.components.schemas[s.$ref.replace('#/components/schemas/', '')];

function operations(doc: OpenApiDocument): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([m, op]): [string, Operation] => [`${m.toUpperCase()} ${path}`, op]));
}

function op(doc: OpenApiDocument, method: string, path: string): Operation {
  const o = doc.paths[path]?.[method];
  if (!o) throw new Error(`${method} ${path} is not documented`);
  return o;
}

/** Literal values a schema (or a union of schemas) allows for a property. */
function literals(doc: OpenApiDocument, s: Schema | undefined, property: string): unknown[] {
  const schema = componentOf(doc, s);
  if (!schema) return [];
  if (schema.anyOf) return schema.anyOf.flatMap((m) => literals(doc, m, property));
  const p = componentOf(doc, schema.properties?.[property]);
  if (!p) return [];
  return p.anyOf ? p.anyOf.flatMap((m) => componentOf(doc, m)?.enum ?? []) : (p.enum ?? []);
}

describe('the OpenAPI document names what a client needs', () => {
  const h = useServer('pglite');
  let doc: OpenApiDocument;
  beforeAll(async () => {
    doc = await fetchDocument(h());
  });

  it('every operation has a unique operationId and every response a status and a description', () => {
    const ops = operations(doc);
    expect(ops.filter(([, o]) => !o.operationId).map(([name]) => name)).toEqual([]);
    const ids = ops.map(([, o]) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [name, o] of ops) {
      for (const [status, r] of Object.entries(o.responses)) {
        expect(status, name).toMatch(/^([1-5]\d\d|default)$/);
        expect(r.description, `${name} ${status}`).toMatch(/\w/);
      }
    }
  });

  it('the protocol’s schemas are named components, and the routes refer to them', () => {
    for (const name of ['Device', 'DeviceStatus', 'Organization', 'SecurityGroup', 'Convergence', 'ErrorResponse', 'WatchEvent', 'ConvergenceEvent']) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
    const get = op(doc, 'get', '/api/organizations/{org}/devices/{id}');
    expect(get.responses['200']?.content?.[MEDIA.json]?.schema).toEqual({ $ref: '#/components/schemas/Device' });
  });

  it('the error body’s code is the catalog', () => {
    const error = componentOf(doc, doc.components.schemas['ErrorResponse']?.properties?.['error']);
    expect(componentOf(doc, error?.properties?.['code'])?.enum).toEqual(ERROR_CODES);
    const patch = op(doc, 'patch', '/api/organizations/{org}/devices/{id}');
    for (const status of ['400', '401', '403', '404', '409', '412', '500']) {
      expect(patch.responses[status]?.content?.[MEDIA.json]?.schema, status).toEqual({ $ref: '#/components/schemas/ErrorResponse' });
    }
  });

  it('the revision headers, conditional requests and Retry-After are declared where the server uses them', () => {
    const list = op(doc, 'get', '/api/organizations/{org}/devices');
    expect(Object.keys(list.responses['200']?.headers ?? {}).sort()).toEqual([HEADERS.etag, HEADERS.revision].sort());
    expect(list.responses['304']?.headers?.[HEADERS.etag]).toBeDefined();
    expect(list.parameters).toContainEqual(expect.objectContaining({ in: 'header', name: HEADERS.ifNoneMatch }));
    for (const [method, path] of [
      ['patch', '/api/organizations/{org}/devices/{id}'],
      ['delete', '/api/organizations/{org}/devices/{id}'],
      ['patch', '/api/organizations/{org}'],
      ['delete', '/api/organizations/{org}/security_groups/{id}'],
    ] as const) {
      expect(op(doc, method, path).parameters, `${method} ${path}`).toContainEqual(expect.objectContaining({ in: 'header', name: HEADERS.ifMatch }));
    }
    expect(op(doc, 'get', '/api/organizations/{org}/devices/{id}').responses['200']?.headers?.[HEADERS.etag]).toBeDefined();
    expect(op(doc, 'post', '/api/organizations/{org}/events').responses['503']?.headers?.[HEADERS.retryAfter]).toBeDefined();
    expect(op(doc, 'put', '/api/organizations/{org}/devices/{id}/status').responses['503']?.headers?.[HEADERS.retryAfter]).toBeDefined();
  });

  it('the watch streams’ lines are documented under their 200, as application/json;stream=watch', () => {
    const events = op(doc, 'post', '/api/organizations/{org}/events').responses['200']?.content?.[MEDIA.watch]?.schema;
    expect(events).toEqual({ $ref: '#/components/schemas/WatchEvent' });
    expect(new Set(literals(doc, events, 'type'))).toEqual(new Set(EVENT_TYPES));
    const convergence = op(doc, 'get', '/api/organizations/{org}/convergence').responses['200']?.content;
    expect(convergence?.[MEDIA.json]?.schema).toEqual({ $ref: '#/components/schemas/Convergence' });
    expect(new Set(literals(doc, convergence?.[MEDIA.watch]?.schema, 'type'))).toEqual(new Set(['convergence', 'error']));
  });

  it('nullable fields are written one way, as a type list with null, never as anyOf with a null branch', () => {
    const nullBranches: string[] = [];
    let typeLists = 0;
    const walk = (v: unknown, at: string): void => {
      if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${at}/${i}`));
      if (typeof v !== 'object' || v === null) return;
      const s = v as Schema;
      if (s.anyOf?.some((m) => m['type'] === 'null')) nullBranches.push(at);
      if (Array.isArray(s['type']) && s['type'].includes('null')) typeLists++;
      for (const [k, x] of Object.entries(s)) walk(x, `${at}/${k}`);
    };
    walk(doc, '#');
    expect(nullBranches).toEqual([]);
    expect(componentOf(doc, doc.components.schemas['DeviceStatusInput']?.properties?.['applied_revision'])?.['type']).toEqual(['integer', 'null']);
    expect(typeLists).toBeGreaterThan(20);
  });

  it('servers and the license (package.json’s) are stated', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string };
    expect(doc.info.license).toMatchObject({ name: pkg.license, identifier: pkg.license });
    expect(doc.servers?.length).toBeGreaterThan(0);
  });
});
