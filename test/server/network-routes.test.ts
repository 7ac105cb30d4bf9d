/**
 * Issue 12, routes: an organization's network-wide routes (`network.routes`)
 * are held to the tunnel pool rule device approvals are held to (409
 * `conflict`, docs/protocol.md "Routes"), while a network route may cover a
 * device's approved route, since that is how traffic reaches it.
 */
import { describe, expect, it } from 'vitest';
import { paths, type Device, type Organization } from '../../src/protocol/index.js';
import { backends, errorCode, useServer, type Harness } from './fixtures.js';

interface ErrorDetails {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

const POOL = '100.64.0.0/16';

async function org(s: Harness, routes: string[] = []): Promise<Organization> {
  return s.createOrg({ network: { ipv4_cidr: POOL, routes: routes.map((destination) => ({ destination })) } });
}

const setRoutes = (s: Harness, id: string, routes: string[], extra: Record<string, unknown> = {}) =>
  s.call('PATCH', paths.organization(id), { token: s.admin, body: { network: { routes: routes.map((destination) => ({ destination })), ...extra } } });

describe.each(backends())('network-wide routes on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    // Fix: patchOrganization and createOrganization call checkNetworkRoutes (route-approval.ts).
    it("refuses (409) a network route overlapping the tunnel pool, or a default route, naming the pool; nothing is written", async () => {
      const s = h();
      const o = await org(s, ['10.9.0.0/16']);
      for (const cidr of ['100.64.7.0/24', '100.64.0.0/16', '100.0.0.0/8', '0.0.0.0/0', '::/0']) {
        const res = await setRoutes(s, o.id, ['10.9.0.0/16', cidr]);
        expect([res.statusCode, errorCode(res)], `${cidr}: ${res.body}`).toEqual([409, 'conflict']);
        const { error } = res.json<ErrorDetails>();
        expect(error.message).toContain(cidr);
        expect(error.details).toMatchObject({ path: '/network/routes/1/destination', cidr });
        if (cidr.endsWith('/0')) expect(error.message).toContain('default route');
        else {
          expect(error.message).toContain(POOL);
          expect(error.details).toMatchObject({ tunnel_pool: POOL });
        }
      }
      const after = await s.ok<Organization>(200, 'GET', paths.organization(o.id));
      expect([after.revision, after.network.routes]).toEqual([o.revision, [{ destination: '10.9.0.0/16' }]]);

      // Creating an organization with one is refused the same way.
      const created = await s.call('POST', paths.organizations(), {
        token: s.admin,
        body: { name: 'pool-route', network: { ipv4_cidr: POOL, routes: [{ destination: '100.64.1.0/24', via: '100.64.0.9' }] } },
      });
      expect([created.statusCode, errorCode(created)]).toEqual([409, 'conflict']);
      expect(created.json<ErrorDetails>().error.details).toMatchObject({ path: '/network/routes/0/destination', tunnel_pool: POOL });
    });

    it('refuses (400) a network route or an auto-approve prefix with host bits set, naming the entry and the prefix it should be', async () => {
      const s = h();
      const o = await org(s, ['10.9.0.0/16']);
      const cases: [Record<string, unknown>, string, string][] = [
        [{ routes: [{ destination: '10.9.0.0/16' }, { destination: '10.20.0.1/16' }] }, '/network/routes/1/destination', '10.20.0.0/16'],
        [{ auto_approve_cidrs: ['fd00:20::1/48'] }, '/network/auto_approve_cidrs/0', 'fd00:20::/48'],
      ];
      for (const [network, path, should] of cases) {
        const res = await s.call('PATCH', paths.organization(o.id), { token: s.admin, body: { network } });
        expect([res.statusCode, errorCode(res)], res.body).toEqual([400, 'validation_failed']);
        const { error } = res.json<ErrorDetails>();
        expect(error.details).toMatchObject({ path });
        expect(error.message).toContain(should);
        expect(error.message).toContain('host bits');
      }
      const after = await s.ok<Organization>(200, 'GET', paths.organization(o.id));
      expect([after.revision, after.network.routes, after.network.auto_approve_cidrs]).toEqual([o.revision, [{ destination: '10.9.0.0/16' }], []]);
      const created = await s.call('POST', paths.organizations(), {
        token: s.admin,
        body: { name: 'host-bits', network: { ipv4_cidr: POOL, routes: [{ destination: '192.168.5.7/24' }] } },
      });
      expect([created.statusCode, errorCode(created)]).toEqual([400, 'validation_failed']);
      expect(created.json<ErrorDetails>().error).toMatchObject({ details: { path: '/network/routes/0/destination' }, message: expect.stringContaining('192.168.5.0/24') });
    });

    it('checks every route against a new pool, and only new routes against the same pool', async () => {
      const s = h();
      const o = await org(s, ['10.9.0.0/16']);
      // No devices, so the pool may change: not onto a network route.
      const moved = await setRoutes(s, o.id, ['10.9.0.0/16'], { ipv4_cidr: '10.9.128.0/17' });
      expect([moved.statusCode, errorCode(moved)]).toEqual([409, 'conflict']);
      expect(moved.json<ErrorDetails>().error.details).toMatchObject({ path: '/network/routes/0/destination', tunnel_pool: '10.9.128.0/17' });
      const pool = await s.call('PATCH', paths.organization(o.id), { token: s.admin, body: { network: { ipv4_cidr: '10.9.0.0/24' } } });
      expect([pool.statusCode, errorCode(pool)]).toEqual([409, 'conflict']);

      // A route stored before this check (written here behind the API's back) fails no later change.
      await s.server.db.query(
        `UPDATE objects SET value = jsonb_set(value, '{network,routes}', $2::text::jsonb) WHERE org_id = $1 AND kind = 'organization' AND id = $1`,
        [o.id, JSON.stringify([{ destination: '100.64.9.0/24' }])],
      );
      const mtu = await s.call('PATCH', paths.organization(o.id), { token: s.admin, body: { network: { mtu: 1380 } } });
      expect(mtu.statusCode, mtu.body).toBe(200);
      const more = await setRoutes(s, o.id, ['100.64.9.0/24', '10.10.0.0/16']);
      expect(more.statusCode, more.body).toBe(200);
    });

    it("accepts a network route covering a device's approved route, in either order: it carries the traffic the approval assigns", async () => {
      const s = h();
      const o = await org(s, ['10.20.0.0/16']);
      const router = await s.createDevice(o.id, { hostname: 'router-1', advertise_cidrs: ['10.20.0.0/16', '10.30.1.0/24'] });
      const approved = await s.call('PATCH', paths.device(o.id, router.id), { token: s.admin, body: { approved_cidrs: ['10.20.0.0/16', '10.30.1.0/24'] } });
      expect(approved.statusCode, approved.body).toBe(200);
      expect(approved.json<Device>().approved_cidrs).toEqual(['10.20.0.0/16', '10.30.1.0/24']);
      const routes = await setRoutes(s, o.id, ['10.20.0.0/16', '10.30.0.0/16']);
      expect(routes.statusCode, routes.body).toBe(200);
    });
  });
});
