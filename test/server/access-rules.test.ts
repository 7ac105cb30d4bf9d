/**
 * Issue 13, "Every route's rule is one table in one place": the access table
 * (src/server/access/rules.ts) against the server. Every route the server
 * registers has exactly one rule and every rule a route; the auth matrix is
 * generated from the table, for every entry point (REST routes, the watch
 * stream, the agent tunnel's upgrade, the private listener) and every kind of
 * principal: allowed, the call gets past authorization (any status but 401
 * and 403); not allowed, 401 or 403 (404 for another organization's token).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HEADERS, ROUTES, bearerAuthorization, paths, type Organization } from '../../src/protocol/index.js';
import { ACCESS_RULES, privateKey, signPrivateToken, type AccessRule, type PrincipalKind } from '../../src/server/access/index.js';
import { startServer } from '../../src/server/index.js';
import { errorCode, Harness, type InjectResponse, type Method } from './fixtures.js';
import { accessTableMarkdown } from './support/access-table.js';

const PRIVATE_SECRET = 'access-rules-test-secret-0123456789';

/** The kinds a bearer token on the public listener resolves to, and a call without one. */
const TOKEN_KINDS = ['admin', 'org-admin', 'org-read', 'device', 'registration'] as const satisfies readonly PrincipalKind[];
type Caller = (typeof TOKEN_KINDS)[number] | 'none';
const CALLERS: readonly Caller[] = [...TOKEN_KINDS, 'none'];

interface World {
  orgA: Organization;
  /** The device whose token is `device`, and another device of the same organization. */
  deviceId: string;
  otherDeviceId: string;
  tokens: Record<Caller, string | undefined>;
  /** An organization admin token of another organization. */
  otherOrg: string;
}

const restRules = ACCESS_RULES.filter((r) => r.entry === 'rest' || r.entry === 'watch');
const label = (r: { method: string; route: string }): string => `${r.method} ${r.route}`;

/** May `kind` make the call at all (before a grant's own condition)? */
function allows(rule: AccessRule, caller: Caller): boolean {
  if (rule.allow === 'anyone') return true;
  return caller !== 'none' && rule.allow[caller] !== undefined;
}

/** A path for `rule` that its grant for `caller` covers (its own device, a read-only method), or, with `covered` false, does not. */
function pathFor(rule: AccessRule, w: World, caller: Caller, org: string, covered = true): string {
  const grant = rule.allow === 'anyone' || caller === 'none' ? undefined : rule.allow[caller];
  const ownDevice = typeof grant === 'object' && 'ownDevice' in grant;
  const methods = typeof grant === 'object' && 'methods' in grant ? grant.methods : undefined;
  // Ids nothing has: an allowed write changes nothing that the next call needs.
  const id = ownDevice ? (covered ? w.deviceId : w.otherDeviceId) : randomUUID();
  const method = methods ? (covered ? (methods[0] ?? 'ping') : 'force-sync') : 'ping';
  return rule.route.replace(':org', encodeURIComponent(org)).replace(':id', id).replace(':method', method);
}

function call(h: Harness, rule: AccessRule, url: string, token: string | undefined): Promise<InjectResponse> {
  // A body no schema accepts: an allowed caller gets its validation error, never a write or an open stream.
  const body = rule.method === 'GET' || rule.method === 'DELETE' ? undefined : { 'no-such-field': true };
  // The server's own Origin, as its dashboard sends: the cookie routes refuse any other before they look at anything.
  return h.call(rule.method as Method, url, { token, body, headers: { origin: 'http://localhost:80' } });
}

/**
 * The routes of Fastify's route tree (`printRoutes`, without a common
 * prefix): each line is a node four columns deeper than its parent, naming
 * the path it adds and, if it is a route, its methods.
 */
function registeredRoutes(tree: string): [string, string][] {
  const stack: string[] = [];
  const routes: [string, string][] = [];
  for (const line of tree.split('\n')) {
    // A segment under `/` (the dashboard's route) is printed without its leading slash: `healthz` below `/`.
    const m = /^(.*?)(?:├── |└── )(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m || m[1] === undefined || m[2] === undefined) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    const path = `${stack[depth - 1] ?? ''}${m[2]}`;
    stack.push(path);
    for (const method of m[3]?.split(', ') ?? []) routes.push([method, path]);
  }
  return routes;
}

const outcome = (res: InjectResponse): string => `${res.statusCode} ${errorCode(res) ?? ''}`.trim();

describe('the access table', () => {
  it('is the one docs/protocol.md shows', () => {
    const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
    const shown = /<!-- access-table:begin[^>]*-->\n([\s\S]*?)\n<!-- access-table:end -->/.exec(doc)?.[1];
    expect(shown).toBe(accessTableMarkdown());
  });
});

describe('the access table is the server (PGlite)', () => {
  let h: Harness;
  let w: World;
  let url: string;
  let privateUrl: string;

  beforeAll(async () => {
    h = new Harness(
      await startServer(
        { logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0, privateHost: '127.0.0.1', privatePort: 0, privateSecret: PRIVATE_SECRET },
        { listen: true },
      ),
    );
    url = h.server.url ?? '';
    privateUrl = h.server.gateway.privateUrl ?? '';
    // Its audit log readable by read tokens, so the audit route's org-read grant holds (refused otherwise: test/server/audit/).
    const orgA = await h.createOrg({ audit_readable_by_read: true });
    const orgB = await h.createOrg();
    const device = await h.createDevice(orgA.id);
    const other = await h.createDevice(orgA.id);
    w = {
      orgA,
      deviceId: device.id,
      otherDeviceId: other.id,
      otherOrg: await h.createToken(orgB.id, 'admin'),
      tokens: {
        admin: h.admin,
        'org-admin': await h.createToken(orgA.id, 'admin'),
        'org-read': await h.createToken(orgA.id, 'read'),
        device: device.device_token,
        registration: (await h.createRegKey(orgA.id)).key,
        none: undefined,
      },
    };
  });

  afterAll(async () => {
    await h.server.close();
  });

  it('every registered route has exactly one rule, and every rule a route', () => {
    const registered = new Set<string>();
    for (const [method, route] of registeredRoutes(h.server.app.printRoutes({ commonPrefix: false }))) {
      if (method !== 'HEAD') registered.add(`${method} ${route}`);
    }
    const ruled = restRules.map(label);
    const duplicates = ruled.filter((r, i) => ruled.indexOf(r) !== i);
    expect(duplicates).toEqual([]);
    expect([...registered].sort()).toEqual([...ruled].sort());
    // The entry points outside the router have one rule each: the agent tunnel and the relay session; agent calls and relay links.
    for (const entry of ['tunnel', 'private'] as const) expect(ACCESS_RULES.filter((r) => r.entry === entry)).toHaveLength(2);
    expect(registered.size).toBeGreaterThan(25);
  });

  for (const rule of restRules) {
    it(`${rule.entry} ${label(rule)}: every caller as the table says`, async () => {
      const want: Record<string, string> = {};
      const got: Record<string, string> = {};
      for (const caller of CALLERS) {
        const res = await call(h, rule, pathFor(rule, w, caller, w.orgA.id), w.tokens[caller]);
        const allowed = allows(rule, caller);
        want[caller] = allowed ? 'passes' : caller === 'none' ? '401 unauthorized' : '403 forbidden';
        got[caller] = allowed ? (res.statusCode === 401 || res.statusCode === 403 ? outcome(res) : 'passes') : outcome(res);
      }
      expect(got).toEqual(want);
    });
  }

  it('HEAD is guarded as its GET: a caller the GET refuses gets the same status', async () => {
    const want: Record<string, number> = {};
    const got: Record<string, number> = {};
    for (const rule of restRules) {
      if (rule.method !== 'GET' || rule.allow === 'anyone') continue;
      for (const caller of CALLERS.filter((c) => !allows(rule, c))) {
        const res = await h.call('HEAD', pathFor(rule, w, caller, w.orgA.id), { token: w.tokens[caller] });
        want[`${caller} HEAD ${rule.route}`] = caller === 'none' ? 401 : 403;
        got[`${caller} HEAD ${rule.route}`] = res.statusCode;
      }
    }
    expect(Object.keys(got).length).toBeGreaterThan(10);
    expect(got).toEqual(want);
  });

  it('where a grant has a condition (its own device, read-only agent methods), a call outside it is 403', async () => {
    // A grant conditioned on the credential not being an API key holds for every token: the user matrix checks keys.
    const tokenCondition = (rule: AccessRule, kind: (typeof TOKEN_KINDS)[number]): boolean => {
      const grant = rule.allow === 'anyone' ? undefined : rule.allow[kind];
      return typeof grant === 'object' && !('noApiKey' in grant);
    };
    const conditional = restRules.flatMap((rule) => TOKEN_KINDS.filter((kind) => tokenCondition(rule, kind)).map((kind) => ({ rule, kind })));
    expect(conditional.map(({ rule, kind }) => `${kind} ${label(rule)}`).sort()).toEqual([
      `device ${label({ method: 'PATCH', route: ROUTES.device })}`,
      `device ${label({ method: 'POST', route: ROUTES.deviceToken })}`,
      `device ${label({ method: 'PUT', route: ROUTES.deviceStatus })}`,
      `org-read ${label({ method: 'POST', route: ROUTES.deviceRpc })}`,
    ]);
    for (const { rule, kind } of conditional) {
      const res = await call(h, rule, pathFor(rule, w, kind, w.orgA.id, false), w.tokens[kind]);
      expect(outcome(res), `${kind} ${label(rule)}`).toBe('403 forbidden');
    }
  });

  it("another organization's token gets 404 on every organization-scoped rule, and a private token is no bearer token", async () => {
    const privateToken = await signPrivateToken(privateKey(PRIVATE_SECRET), 'test', { deviceId: w.deviceId, method: 'ping', deadlineMs: 1_000 });
    const got: Record<string, string> = {};
    const want: Record<string, string> = {};
    for (const rule of restRules) {
      if (rule.scope === 'org-in-path') {
        got[`other org ${label(rule)}`] = outcome(await call(h, rule, pathFor(rule, w, 'org-admin', w.orgA.id), w.otherOrg));
        want[`other org ${label(rule)}`] = '404 not_found';
      }
      if (rule.allow !== 'anyone') {
        got[`private token ${label(rule)}`] = outcome(await call(h, rule, pathFor(rule, w, 'admin', w.orgA.id), privateToken));
        want[`private token ${label(rule)}`] = '401 unauthorized';
      }
    }
    expect(got).toEqual(want);
  });

  it('tunnel: the upgrade answers every caller as the table says', async () => {
    const rule = ACCESS_RULES.find((r) => r.entry === 'tunnel');
    if (!rule) throw new Error('no tunnel rule');
    const upgrade = (token: string | undefined): Promise<string> =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string> = token === undefined ? {} : { [HEADERS.authorization]: bearerAuthorization(token) };
        const ws = new WebSocket(`${url.replace('http', 'ws')}${paths.agentTunnel()}`, { headers });
        ws.once('open', () => {
          ws.close();
          resolve('passes');
        });
        ws.once('unexpected-response', (_req, res) => {
          res.resume();
          resolve(String(res.statusCode));
        });
        ws.once('error', reject);
      });
    const want: Record<string, string> = {};
    const got: Record<string, string> = {};
    for (const caller of CALLERS) {
      want[caller] = allows(rule, caller) ? 'passes' : caller === 'none' ? '401' : '403';
      got[caller] = await upgrade(w.tokens[caller]);
    }
    expect(got).toEqual(want);
  });

  it('private: only a private token for this device and method passes; bearer tokens of every kind are 401', async () => {
    const rule = ACCESS_RULES.find((r) => r.entry === 'private');
    if (!rule || rule.allow === 'anyone') throw new Error('no private rule');
    expect(Object.keys(rule.allow)).toEqual(['replica']);
    const post = async (path: string, token: string | undefined): Promise<number> => {
      const headers: Record<string, string> = { [HEADERS.contentType]: 'application/json' };
      if (token !== undefined) headers[HEADERS.authorization] = bearerAuthorization(token);
      const res = await fetch(`${privateUrl}${path}`, { method: 'POST', headers, body: '{}' });
      await res.arrayBuffer();
      return res.status;
    };
    const key = privateKey(PRIVATE_SECRET);
    const path = paths.privateAgentRpc(w.deviceId, 'ping');
    const grant = (deviceId: string, method: string): Promise<string> => signPrivateToken(key, 'test', { deviceId, method, deadlineMs: 1_000 });
    const got: Record<string, number> = {};
    for (const caller of CALLERS) got[caller] = await post(path, w.tokens[caller]);
    got['another device'] = await post(path, await grant(w.otherDeviceId, 'ping'));
    got['another method'] = await post(path, await grant(w.deviceId, 'status'));
    got['another key'] = await post(path, await signPrivateToken(privateKey('another-secret-0123456789abcdef'), 'test', { deviceId: w.deviceId, method: 'ping', deadlineMs: 1_000 }));
    expect(got).toEqual(Object.fromEntries(Object.keys(got).map((k) => [k, 401])));
    // The replica itself: past authorization (no tunnel to the device here, so not delivered).
    const own = await post(path, await grant(w.deviceId, 'ping'));
    expect([401, 403]).not.toContain(own);
  });
});
