/**
 * A route compiles its schemas when it first validates a request, not at
 * the start (validator.ts): these tests compile every route's schemas at
 * once, and check that a lazily compiled route still refuses what its schema
 * refuses.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { paths } from '../../src/protocol/index.js';
import type { FleetServer } from '../../src/server/index.js';
import { compileRouteSchema } from '../../src/server/http/validator.js';
import { startServerWithHooks } from '../../src/server/server.js';
import { Harness } from './fixtures.js';

const started: FleetServer[] = [];
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
});

async function start(eagerValidation: boolean): Promise<Harness> {
  const server = await startServerWithHooks({ logLevel: 'silent', memory: true }, { listen: false }, { eagerValidation });
  started.push(server);
  return new Harness(server);
}

describe('route schemas', () => {
  it('every route of the server compiles its schemas (what a start no longer does)', async () => {
    // Eager: a schema Ajv refuses fails this start.
    const h = await start(true);
    const res = await h.call('POST', paths.organizations(), { token: h.admin, body: { name: 7 } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { code: 'validation_failed' } });
  });

  it('a lazily compiled route refuses on its first request what its schema refuses, then accepts a valid one', async () => {
    const h = await start(false);
    const org = await h.createOrg();
    const bad = await h.call('POST', paths.devices(org.id), { token: h.admin, body: { hostname: 7 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: 'validation_failed' } });
    // Path and query parameters are coerced strings, checked again once coerced.
    const query = await h.call('GET', paths.devices(org.id), { token: h.admin, query: { limit: 'Infinity' } });
    expect(query.statusCode).toBe(400);
    const ok = await h.call('GET', paths.devices(org.id), { token: h.admin, query: { limit: '5' } });
    expect(ok.statusCode).toBe(200);
  });

  it('compiles each schema object once per process, and throws for one Ajv refuses', () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    const first = compileRouteSchema(schema, 'body');
    expect(compileRouteSchema(schema, 'body')).toBe(first);
    expect(compileRouteSchema({ ...schema }, 'body')).not.toBe(first);
    expect(first({ a: 1 })).toBe(true);
    expect(first({ a: '1' })).toBe(false);
    // As query strings the same schema coerces.
    expect(compileRouteSchema(schema, 'strings')({ a: '1' })).toBe(true);
    expect(() => compileRouteSchema({ type: 'nonsense' }, 'body')).toThrow();
  });
});
