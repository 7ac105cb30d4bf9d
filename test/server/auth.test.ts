import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, paths, type ErrorCode, type Organization } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, wgKey, type Harness, type Method } from './fixtures.js';

/** Who calls: every kind of bearer token docs/protocol.md knows, plus none and a bogus one. */
const PRINCIPALS = ['admin', 'orgAdmin', 'orgRead', 'device', 'otherDevice', 'regKey', 'otherOrg', 'missing', 'unknown'] as const;
type Who = (typeof PRINCIPALS)[number];

interface World {
  orgA: Organization;
  orgB: Organization;
  /** The device whose token is `device`. */
  deviceId: string;
  groupId: string;
  tokens: Record<Who, string | undefined>;
}

interface Call {
  method: Method;
  url: string;
  body?: unknown;
}

/** One operation of a route family: `prepare` (as admin) makes what a call needs, fresh each time. */
interface Op {
  name: string;
  prepare: (h: Harness, w: World) => Promise<Call>;
  expect: Record<Who, number>;
}

const ANY_CALLER_401 = { missing: 401, unknown: 401 } as const;
const READ = { admin: 200, orgAdmin: 200, orgRead: 200, device: 200, otherDevice: 200, regKey: 403, otherOrg: 404, ...ANY_CALLER_401 };
const WRITE = (ok: number) => ({ admin: ok, orgAdmin: ok, orgRead: 403, device: 403, otherDevice: 403, regKey: 403, otherOrg: 404, ...ANY_CALLER_401 });

const OPS: Op[] = [
  {
    name: 'GET organizations',
    prepare: async () => ({ method: 'GET', url: paths.organizations() }),
    expect: { ...READ, otherOrg: 200 },
  },
  {
    name: 'POST organizations',
    prepare: async () => ({ method: 'POST', url: paths.organizations(), body: { name: `o-${randomUUID()}` } }),
    expect: { admin: 201, orgAdmin: 403, orgRead: 403, device: 403, otherDevice: 403, regKey: 403, otherOrg: 403, ...ANY_CALLER_401 },
  },
  { name: 'GET organization', prepare: async (_h, w) => ({ method: 'GET', url: paths.organization(w.orgA.id) }), expect: READ },
  {
    name: 'PATCH organization',
    prepare: async (_h, w) => ({ method: 'PATCH', url: paths.organization(w.orgA.id), body: { description: randomUUID() } }),
    expect: WRITE(200),
  },
  {
    // Organization A is not empty: the admin passes the scope check and hits the 409.
    name: 'DELETE organization',
    prepare: async (_h, w) => ({ method: 'DELETE', url: paths.organization(w.orgA.id) }),
    expect: { ...WRITE(403), admin: 409 },
  },
  { name: 'GET convergence', prepare: async (_h, w) => ({ method: 'GET', url: paths.convergence(w.orgA.id) }), expect: READ },
  { name: 'GET devices', prepare: async (_h, w) => ({ method: 'GET', url: paths.devices(w.orgA.id) }), expect: READ },
  {
    name: 'POST devices',
    prepare: async (_h, w) => ({ method: 'POST', url: paths.devices(w.orgA.id), body: { hostname: 'h', public_key: wgKey() } }),
    expect: { ...WRITE(201), regKey: 201 },
  },
  { name: 'GET device', prepare: async (_h, w) => ({ method: 'GET', url: paths.device(w.orgA.id, w.deviceId) }), expect: READ },
  {
    name: 'PATCH device (own endpoints)',
    prepare: async (_h, w) => ({
      method: 'PATCH',
      url: paths.device(w.orgA.id, w.deviceId),
      body: { endpoints: [{ source: 'local', address: `10.0.0.${1 + Math.floor(Math.random() * 250)}:51820` }] },
    }),
    expect: { ...WRITE(200), device: 200 },
  },
  {
    name: 'PATCH device (relay: not a discovered field)',
    prepare: async (_h, w) => ({ method: 'PATCH', url: paths.device(w.orgA.id, w.deviceId), body: { relay: true } }),
    expect: WRITE(200),
  },
  {
    name: 'DELETE device',
    prepare: async (h, w) => {
      const d = await h.createDevice(w.orgA.id);
      return { method: 'DELETE', url: paths.device(w.orgA.id, d.id) };
    },
    expect: WRITE(204),
  },
  {
    name: 'PUT device status',
    prepare: async (_h, w) => ({
      method: 'PUT',
      url: paths.deviceStatus(w.orgA.id, w.deviceId),
      body: { applied_revision: 1, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 't' },
    }),
    expect: { ...WRITE(403), device: 200 },
  },
  { name: 'GET security groups', prepare: async (_h, w) => ({ method: 'GET', url: paths.securityGroups(w.orgA.id) }), expect: READ },
  {
    name: 'POST security groups',
    prepare: async (_h, w) => ({ method: 'POST', url: paths.securityGroups(w.orgA.id), body: { description: 'g' } }),
    expect: WRITE(201),
  },
  { name: 'GET security group', prepare: async (_h, w) => ({ method: 'GET', url: paths.securityGroup(w.orgA.id, w.groupId) }), expect: READ },
  {
    name: 'PATCH security group',
    prepare: async (_h, w) => ({ method: 'PATCH', url: paths.securityGroup(w.orgA.id, w.groupId), body: { description: randomUUID() } }),
    expect: WRITE(200),
  },
  {
    name: 'DELETE security group',
    prepare: async (h, w) => {
      const g = await h.createGroup(w.orgA.id);
      return { method: 'DELETE', url: paths.securityGroup(w.orgA.id, g.id) };
    },
    expect: WRITE(204),
  },
  { name: 'POST tokens', prepare: async (_h, w) => ({ method: 'POST', url: paths.tokens(w.orgA.id), body: { role: 'read' } }), expect: WRITE(201) },
  { name: 'GET tokens', prepare: async (_h, w) => ({ method: 'GET', url: paths.tokens(w.orgA.id) }), expect: WRITE(200) },
  {
    name: 'DELETE token',
    prepare: async (h, w) => {
      const t = await h.ok<{ id: string }>(201, 'POST', paths.tokens(w.orgA.id), { body: { role: 'read' } });
      return { method: 'DELETE', url: paths.token(w.orgA.id, t.id) };
    },
    expect: WRITE(204),
  },
  {
    name: 'POST registration keys',
    prepare: async (_h, w) => ({ method: 'POST', url: paths.registrationKeys(w.orgA.id), body: { description: 'k' } }),
    expect: WRITE(201),
  },
  { name: 'GET registration keys', prepare: async (_h, w) => ({ method: 'GET', url: paths.registrationKeys(w.orgA.id) }), expect: WRITE(200) },
  {
    name: 'GET registration key',
    prepare: async (h, w) => {
      const k = await h.createRegKey(w.orgA.id);
      return { method: 'GET', url: paths.registrationKey(w.orgA.id, k.id) };
    },
    expect: WRITE(200),
  },
  {
    name: 'DELETE registration key',
    prepare: async (h, w) => {
      const k = await h.createRegKey(w.orgA.id);
      return { method: 'DELETE', url: paths.registrationKey(w.orgA.id, k.id) };
    },
    expect: WRITE(204),
  },
];

function codeFor(status: number): ErrorCode | undefined {
  const found = Object.entries(ERRORS).find(([, e]) => e.status === status);
  return found?.[0] as ErrorCode | undefined;
}

describe.each(backends())('auth matrix on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);
    let w: World;

    beforeAll(async () => {
      const s = h();
      const orgA = await s.createOrg();
      const orgB = await s.createOrg();
      const group = await s.createGroup(orgA.id);
      const key = await s.createRegKey(orgA.id, { description: 'reusable' });
      const dev = await s.createDevice(orgA.id);
      const other = await s.createDevice(orgA.id);
      w = {
        orgA,
        orgB,
        deviceId: dev.id,
        groupId: group.id,
        tokens: {
          admin: s.admin,
          orgAdmin: await s.createToken(orgA.id, 'admin'),
          orgRead: await s.createToken(orgA.id, 'read'),
          device: dev.device_token,
          otherDevice: other.device_token,
          regKey: key.key,
          otherOrg: await s.createToken(orgB.id, 'admin'),
          missing: undefined,
          unknown: 'fpt_this-token-was-never-issued',
        },
      };
    });

    for (const op of OPS) {
      it(`${op.name}: every principal gets its status and error code`, async () => {
        const s = h();
        const got: Partial<Record<Who, number>> = {};
        const badBodies: string[] = [];
        for (const who of PRINCIPALS) {
          const call = await op.prepare(s, w);
          const res = await s.call(call.method, call.url, { token: w.tokens[who], body: call.body });
          got[who] = res.statusCode;
          if (res.statusCode >= 400) {
            const want = codeFor(res.statusCode);
            const code = errorCode(res);
            // 409 has two codes; every other status has exactly one.
            if (res.statusCode !== 409 && code !== want) badBodies.push(`${who}: ${res.statusCode} with code ${code}`);
          }
        }
        expect(got).toEqual(op.expect);
        expect(badBodies).toEqual([]);
      });
    }

    it('organization-scoped tokens list only their own organization', async () => {
      const s = h();
      for (const who of ['orgAdmin', 'orgRead', 'device'] as const) {
        const body = (await s.call('GET', paths.organizations(), { token: w.tokens[who] })).json() as { items: { id: string }[] };
        expect(body.items.map((o) => o.id)).toEqual([w.orgA.id]);
      }
      const other = (await s.call('GET', paths.organizations(), { token: w.tokens.otherOrg })).json() as { items: { id: string }[] };
      expect(other.items.map((o) => o.id)).toEqual([w.orgB.id]);
      const all = (await s.call('GET', paths.organizations(), { token: s.admin })).json() as { items: { id: string }[] };
      expect(all.items.map((o) => o.id)).toEqual(expect.arrayContaining([w.orgA.id, w.orgB.id]));
    });

    it("another organization's device, group, key and token are 404 even under the token's own organization", async () => {
      const s = h();
      const bDevice = await s.createDevice(w.orgB.id);
      const bGroup = await s.createGroup(w.orgB.id);
      const bKey = await s.createRegKey(w.orgB.id);
      const t = { token: w.tokens.orgAdmin };
      expect((await s.call('GET', paths.device(w.orgA.id, bDevice.id), t)).statusCode).toBe(404);
      expect((await s.call('PATCH', paths.device(w.orgA.id, bDevice.id), { ...t, body: { relay: true } })).statusCode).toBe(404);
      expect((await s.call('DELETE', paths.device(w.orgA.id, bDevice.id), t)).statusCode).toBe(404);
      expect((await s.call('GET', paths.securityGroup(w.orgA.id, bGroup.id), t)).statusCode).toBe(404);
      expect((await s.call('DELETE', paths.securityGroup(w.orgA.id, bGroup.id), t)).statusCode).toBe(404);
      expect((await s.call('GET', paths.registrationKey(w.orgA.id, bKey.id), t)).statusCode).toBe(404);
      expect((await s.call('DELETE', paths.registrationKey(w.orgA.id, bKey.id), t)).statusCode).toBe(404);
      // A device of B can't write its status through A's path, nor can A's device through B's.
      const status = { applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null };
      expect((await s.call('PUT', paths.deviceStatus(w.orgA.id, bDevice.id), { token: bDevice.device_token, body: status })).statusCode).toBe(404);
      expect((await s.call('PUT', paths.deviceStatus(w.orgB.id, w.deviceId), { token: w.tokens.device, body: status })).statusCode).toBe(404);
      // Still there for B.
      expect((await s.call('GET', paths.device(w.orgB.id, bDevice.id), { token: s.admin })).statusCode).toBe(200);
    });

    it("a device token may not PATCH another device, nor fields other than its discovered ones", async () => {
      const s = h();
      const other = await s.createDevice(w.orgA.id);
      const own = { token: w.tokens.device };
      const res = await s.call('PATCH', paths.device(w.orgA.id, other.id), { ...own, body: { hostname: 'stolen' } });
      expect(res.statusCode).toBe(403);
      expect(errorCode(res)).toBe('forbidden');
      for (const body of [{ relay: true }, { security_group_id: w.groupId }, { public_key: wgKey() }, { approved_cidrs: ['10.9.0.0/24'] }]) {
        const r = await s.call('PATCH', paths.device(w.orgA.id, w.deviceId), { ...own, body });
        expect(r.statusCode, JSON.stringify(body)).toBe(403);
        expect(errorCode(r)).toBe('forbidden');
      }
      const ok = await s.call('PATCH', paths.device(w.orgA.id, w.deviceId), {
        ...own,
        body: { hostname: 'renamed-by-itself', symmetric_nat: true, endpoints: [{ source: 'stun', address: '[2001:db8::1]:51820' }] },
      });
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toMatchObject({ hostname: 'renamed-by-itself', symmetric_nat: true });
      const untouched = (await s.call('GET', paths.device(w.orgA.id, other.id), { token: s.admin })).json() as { hostname: string };
      expect(untouched.hostname).toBe(other.hostname);
    });

    it('only the device itself may PUT its status, and what it wrote is what GET returns', async () => {
      const s = h();
      const body = { applied_revision: 3, apply_error: 'boom', local_endpoints: ['10.1.1.1:51820'], os: 'linux', agent_version: '1.2.3' };
      const mine = await s.call('PUT', paths.deviceStatus(w.orgA.id, w.deviceId), { token: w.tokens.device, body });
      expect(mine.statusCode).toBe(200);
      const other = await s.call('PUT', paths.deviceStatus(w.orgA.id, w.deviceId), { token: w.tokens.otherDevice, body });
      expect(other.statusCode).toBe(403);
      const got = (await s.call('GET', paths.device(w.orgA.id, w.deviceId), { token: w.tokens.orgRead })).json() as {
        status: Record<string, unknown>;
      };
      expect(got.status).toMatchObject({ ...body, online: true });
      expect(typeof got.status['last_seen']).toBe('string');
    });

    it('tokens are stored hashed; revoked and expired tokens are 401', async () => {
      const s = h();
      const created = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(w.orgA.id), { body: { role: 'read' } });
      const rows = await s.server.db.query<Record<string, unknown>>('SELECT * FROM tokens WHERE id = $1', [created.id]);
      expect(JSON.stringify(rows)).not.toContain(created.token);
      const listed = await s.call('GET', paths.tokens(w.orgA.id), { token: s.admin });
      expect(listed.body).not.toContain(created.token);
      expect((await s.call('GET', paths.devices(w.orgA.id), { token: created.token })).statusCode).toBe(200);
      await s.ok(204, 'DELETE', paths.token(w.orgA.id, created.id));
      const revoked = await s.call('GET', paths.devices(w.orgA.id), { token: created.token });
      expect(revoked.statusCode).toBe(401);
      expect(errorCode(revoked)).toBe('unauthorized');

      const past = new Date(Date.now() - 60_000).toISOString();
      const expired = await s.ok<{ token: string }>(201, 'POST', paths.tokens(w.orgA.id), { body: { role: 'admin', expires_at: past } });
      expect((await s.call('GET', paths.devices(w.orgA.id), { token: expired.token })).statusCode).toBe(401);
    });

    it('the token is checked before the body: without a valid one every request is 401, whatever it sends', async () => {
      const s = h();
      const requests: [Method, string, string][] = [
        ['POST', paths.organizations(), '{"name": '],
        ['POST', paths.organizations(), JSON.stringify({ name: 'x', bogus: true })],
        ['POST', paths.organizations(), JSON.stringify({ name: 'x', description: 'y'.repeat(1024 * 1024 + 1) })],
        ['POST', paths.devices(w.orgA.id), JSON.stringify({ hostname: 'h', public_key: wgKey(), tunnel_ip: '100.64.0.1' })],
        ['PATCH', paths.device(w.orgA.id, w.deviceId), JSON.stringify({ status: {} })],
        ['POST', paths.securityGroups(w.orgA.id), JSON.stringify({ inbound_rules: 'all' })],
        ['POST', paths.tokens(w.orgA.id), JSON.stringify({ role: 'owner' })],
        ['GET', paths.organization('not-a-uuid'), ''],
      ];
      for (const [method, url, payload] of requests) {
        for (const token of [undefined, w.tokens.unknown]) {
          const res = await s.call(method, url, { token, ...(payload ? { payload } : {}) });
          expect(res.statusCode, `${method} ${url} ${payload.slice(0, 40)} with ${token ?? 'no token'}`).toBe(401);
          expect(errorCode(res)).toBe('unauthorized');
        }
      }
    });

    it('a malformed Authorization header is 401', async () => {
      const s = h();
      for (const value of ['Basic abc', 'Bearer', 'Bearer a b', s.admin]) {
        const res = await s.call('GET', paths.organizations(), { headers: { authorization: value } });
        expect(res.statusCode, value).toBe(401);
      }
    });
  });
});
