import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatIpv4, parseIpv4, paths, type EnrolledDevice } from '../../src/protocol/index.js';
import { backends, useServer, wgKey, type Harness } from './fixtures.js';

/** The address the allocator must hand out: the lowest of the pool not in use. */
function lowestFree(used: Set<number>, first: number): number {
  let ip = first;
  while (used.has(ip)) ip++;
  return ip;
}

async function ipsInUse(s: Harness, org: string): Promise<Set<number>> {
  const rows = await s.server.db.query<{ ip: number | string }>('SELECT ip FROM device_ips WHERE org_id = $1', [org]);
  return new Set(rows.map((r) => Number(r.ip)));
}

describe.each(backends())('tunnel IP allocation on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('hands out the lowest free address through any mix of enrollments and deletes', async () => {
      const s = h();
      const org = await s.createOrg({ network: { ipv4_cidr: '10.60.0.0/24' } });
      const first = parseIpv4('10.60.0.1') ?? 0;
      // Each step: true = enroll, false = delete the device at that index (modulo the live ones).
      const steps = fc.sample(fc.array(fc.tuple(fc.boolean(), fc.nat()), { minLength: 60, maxLength: 60 }), { numRuns: 1, seed: 4242 })[0]!;
      const live: EnrolledDevice[] = [];
      const used = new Set<number>();
      for (const [enroll, pick] of steps) {
        if (enroll || live.length === 0) {
          const want = lowestFree(used, first);
          const d = await s.createDevice(org.id);
          expect(d.tunnel_ip).toBe(formatIpv4(want));
          used.add(want);
          live.push(d);
        } else {
          const [gone] = live.splice(pick % live.length, 1);
          await s.ok(204, 'DELETE', paths.device(org.id, gone!.id));
          used.delete(parseIpv4(gone!.tunnel_ip) ?? -1);
        }
        expect(await ipsInUse(s, org.id)).toEqual(used);
      }
    });

    it('organizations created before the free list fill their gaps lowest first', async () => {
      const s = h();
      const org = await s.createOrg({ network: { ipv4_cidr: '10.61.0.0/24' } });
      const ds: EnrolledDevice[] = [];
      for (let i = 0; i < 6; i++) ds.push(await s.createDevice(org.id));
      await s.ok(204, 'DELETE', paths.device(org.id, ds[4]!.id));
      await s.ok(204, 'DELETE', paths.device(org.id, ds[1]!.id));
      // What a database migrated from version 1 holds: addresses in use, no allocator state.
      await s.server.db.query('DELETE FROM ip_free WHERE org_id = $1', [org.id]);
      await s.server.db.query('DELETE FROM ip_pools WHERE org_id = $1', [org.id]);
      const again = [await s.createDevice(org.id), await s.createDevice(org.id), await s.createDevice(org.id)];
      expect(again.map((d) => d.tunnel_ip)).toEqual(['10.61.0.2', '10.61.0.5', '10.61.0.7']);
    });

    it('a full pool is 409 until a delete gives an address back', async () => {
      const s = h();
      const org = await s.createOrg({ network: { ipv4_cidr: '10.62.0.0/29' } });
      const ds: EnrolledDevice[] = [];
      for (let i = 0; i < 6; i++) ds.push(await s.createDevice(org.id));
      expect(ds.map((d) => d.tunnel_ip)).toEqual(['10.62.0.1', '10.62.0.2', '10.62.0.3', '10.62.0.4', '10.62.0.5', '10.62.0.6']);
      const full = await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'x', public_key: wgKey() } });
      expect(full.statusCode).toBe(409);
      await s.ok(204, 'DELETE', paths.device(org.id, ds[2]!.id));
      expect((await s.createDevice(org.id)).tunnel_ip).toBe('10.62.0.3');
      const none = await s.call('POST', paths.devices(org.id), { token: s.admin, body: { hostname: 'y', public_key: wgKey() } });
      expect(none.statusCode).toBe(409);
    });
  });
});
