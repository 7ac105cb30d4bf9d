import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DeviceCreate, OrganizationCreate, paths, ROUTES } from '../../src/protocol/index.js';
import { EMBEDDED_POOL_SIZE, startServer, type FleetServer } from '../../src/server/index.js';
import { MIGRATIONS } from '../../src/server/db/index.js';
import { createDatabase } from '../support/postgres-server.js';
import { Harness, pgAdminUrl, useServer } from './fixtures.js';

/** Routes documented outside the OpenAPI document (docs/protocol.md: no auth, operational). */
// The dashboard's page and files are not API: docs/protocol.md "The dashboard" describes them.
const HIDDEN = new Set<string>([ROUTES.healthz, ROUTES.readyz, ROUTES.metrics, ROUTES.dashboard, ROUTES.dashboardAsset]);

/**
 * Every (method, path) the app serves, from Fastify's route tree
 * (`printRoutes({ commonPrefix: false })`: one node per line, four columns per level).
 */
function registeredRoutes(tree: string): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? '').length / 4;
    stack.length = depth;
    stack.push(m[2] ?? '');
    const path = stack.join('');
    for (const method of (m[3] ?? '').split(',').map((x) => x.trim()).filter(Boolean)) out.push({ method, path });
  }
  return out;
}

interface BodySchema {
  $ref?: string;
  properties?: object;
  required?: string[];
  additionalProperties?: unknown;
}

interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: BodySchema }> } }>>;
  components: { schemas: Record<string, BodySchema> };
}

/** A schema of the document, its `$ref` (to a named component) followed. */
function resolved(doc: OpenApi, schema: BodySchema | undefined): BodySchema | undefined {
  const name = schema?.$ref?.replace('#/components/schemas/', '');
  return name === undefined ? schema : doc.components.schemas[name];
}

describe('system routes (PGlite)', () => {
  const h = useServer('pglite');

  it('GET /api/openapi.json is OpenAPI 3.1 and documents every registered route', async () => {
    const s = h();
    const res = await s.call('GET', ROUTES.openapi);
    expect(res.statusCode).toBe(200);
    const doc = res.json() as OpenApi;
    expect(doc.openapi).toMatch(/^3\.1\./);
    const routes = registeredRoutes(s.server.app.printRoutes({ commonPrefix: false }));
    // Sanity: the parser found the deep routes too.
    expect(routes).toContainEqual({ method: 'PUT', path: ROUTES.deviceStatus });
    const expected = routes
      .filter((r) => r.method !== 'HEAD' && !HIDDEN.has(r.path))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    const documented = Object.entries(doc.paths)
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    expect(documented).toEqual(expected);
    expect(expected.length).toBeGreaterThanOrEqual(20);
  });

  it('the OpenAPI request bodies are the schemas the routes validate with', async () => {
    const s = h();
    const doc = (await s.call('GET', ROUTES.openapi)).json() as OpenApi;
    const pairs: [string, string, { properties: object; required?: string[] }][] = [
      ['/api/organizations/{org}/devices', 'post', DeviceCreate],
      ['/api/organizations', 'post', OrganizationCreate],
    ];
    for (const [p, method, schema] of pairs) {
      const body = resolved(doc, doc.paths[p]?.[method]?.requestBody?.content['application/json']?.schema);
      expect(body, `${method} ${p}`).toBeDefined();
      expect(Object.keys(body?.properties ?? {}).sort()).toEqual(Object.keys(schema.properties).sort());
      expect([...(body?.required ?? [])].sort()).toEqual([...(schema.required ?? [])].sort());
      expect(body?.additionalProperties).toBe(false);
    }
  });

  it('/healthz and /readyz answer without a token', async () => {
    const s = h();
    const health = await s.call('GET', ROUTES.healthz);
    expect(health.statusCode).toBe(200);
    const ready = await s.call('GET', ROUTES.readyz);
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });

  it('/metrics is Prometheus text with request and query counters', async () => {
    const s = h();
    await s.createOrg();
    await s.call('GET', paths.organizations(), { token: s.admin });
    const res = await s.call('GET', ROUTES.metrics);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/^fleetplane_http_requests_total\{method="GET",route="\/api\/organizations",status="200"\} [1-9]/m);
    expect(res.body).toMatch(/^fleetplane_http_requests_total\{method="POST",route="\/api\/organizations",status="201"\} [1-9]/m);
    expect(res.body).toMatch(/^fleetplane_db_queries_total\{[^}]*\} [1-9]/m);
    expect(res.body).toContain('fleetplane_http_request_duration_seconds_bucket');
    expect(res.body).toContain('fleetplane_db_query_duration_seconds_bucket');
  });

  it('unknown routes are 404 with the error body', async () => {
    const s = h();
    const res = await s.call('GET', '/api/nothing-here', { token: s.admin });
    expect(res.statusCode).toBe(404);
    expect((res.json() as { error: { code: string } }).error.code).toBe('not_found');
  });
});

describe('embedded storage on disk', () => {
  it('keeps data and the generated admin token in the data directory across restarts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetplane-data-'));
    try {
      const first = new Harness(await startServer({ dataDir: dir, logLevel: 'silent' }, { listen: false }));
      let orgId: string;
      try {
        expect(first.server.adminToken.source).toBe('generated');
        orgId = (await first.createOrg()).id;
      } finally {
        await first.server.close();
      }
      const tokenFile = join(dir, 'admin-token');
      expect(readFileSync(tokenFile, 'utf8').trim()).toBe(first.admin);
      expect(statSync(tokenFile).mode & 0o077).toBe(0);
      const second = new Harness(await startServer({ dataDir: dir, logLevel: 'silent' }, { listen: false }));
      try {
        expect(second.server.adminToken).toMatchObject({ source: 'data-dir', token: first.admin });
        await second.ok(200, 'GET', paths.organization(orgId));
      } finally {
        await second.server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embedded storage pool', () => {
  /** Client backends of the server's database once 40 queries ran at once through its pool. */
  async function backendsAfterBurst(server: FleetServer): Promise<number> {
    await Promise.all(Array.from({ length: 40 }, () => server.db.query('SELECT pg_sleep(0.02)')));
    const rows = await server.db.query<{ n: number | string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = current_database()`,
    );
    return Number(rows[0]?.n);
  }

  it(`holds ${EMBEDDED_POOL_SIZE} connections by default, and --db-pool-size of them when given`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetplane-data-'));
    try {
      const first = await startServer({ dataDir: dir, logLevel: 'silent' }, { listen: false });
      try {
        expect(await backendsAfterBurst(first)).toBe(EMBEDDED_POOL_SIZE);
      } finally {
        await first.close();
      }
      const second = await startServer({ dataDir: dir, logLevel: 'silent', dbPoolSize: 2 }, { listen: false });
      try {
        expect(await backendsAfterBurst(second)).toBe(2);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.runIf(pgAdminUrl() !== '')('several servers on one PostgreSQL database', () => {
  it('start at once: migrations applied once, one admin token generated and valid on all', async () => {
    const url = await createDatabase(pgAdminUrl());
    const servers = await Promise.all([1, 2, 3].map(() => startServer({ databaseUrl: url, logLevel: 'silent' }, { listen: false })));
    try {
      const rows = await servers[0]!.db.query('SELECT version FROM schema_migrations');
      expect(rows).toHaveLength(MIGRATIONS.length);
      const generated = servers.filter((s) => s.adminToken.source === 'generated');
      expect(generated).toHaveLength(1);
      const token = generated[0]!.adminToken.token ?? '';
      for (const server of servers) {
        const h = new Harness(server);
        expect((await h.call('GET', ROUTES.readyz)).statusCode).toBe(200);
        expect((await h.call('GET', paths.organizations(), { token })).statusCode).toBe(200);
      }
      // A write on one is seen by the others.
      const org = await new Harness(generated[0]!).createOrg();
      const other = servers.find((s) => s !== generated[0])!;
      expect((await new Harness(other).call('GET', paths.organization(org.id), { token })).statusCode).toBe(200);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });
});
