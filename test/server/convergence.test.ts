import { describe, expect, it } from 'vitest';
import { paths, type Convergence } from '../../src/protocol/index.js';
import { backends, useServer } from './fixtures.js';

const report = (applied: number | null, error: string | null = null) => ({
  applied_revision: applied,
  apply_error: error,
  local_endpoints: [],
  os: 'linux',
  agent_version: 'test',
});

describe.each(backends())('convergence on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('counts devices at head, behind, with errors and stale, and lists the ones not converged', async () => {
      const s = h();
      const org = await s.createOrg();
      const empty = await s.ok<Convergence>(200, 'GET', paths.convergence(org.id));
      expect(empty).toEqual({ revision: org.revision, devices: 0, at_head: 0, behind: 0, error: 0, stale: 0, online: 0, not_converged: [] });

      const [atHead, behind, failing, silent] = [
        await s.createDevice(org.id),
        await s.createDevice(org.id),
        await s.createDevice(org.id),
        await s.createDevice(org.id),
      ];
      const head = await s.head(org.id);
      const put = (d: typeof atHead, body: ReturnType<typeof report>) =>
        s.ok(200, 'PUT', paths.deviceStatus(org.id, d!.id), { token: d!.device_token, body });
      await put(atHead, report(head));
      await put(behind, report(head - 1));
      await put(failing, report(head, 'nft: syntax error'));

      const c = await s.ok<Convergence>(200, 'GET', paths.convergence(org.id));
      expect(c).toMatchObject({ revision: head, devices: 4, at_head: 1, behind: 1, error: 1, stale: 1 });
      expect(c.not_converged.map((d) => d.id).sort()).toEqual([behind!.id, failing!.id, silent!.id].sort());
      const f = c.not_converged.find((d) => d.id === failing!.id);
      expect(f).toMatchObject({ hostname: failing!.hostname, applied_revision: head, apply_error: 'nft: syntax error' });
      expect(typeof f?.last_seen).toBe('string');
      expect(c.not_converged.find((d) => d.id === silent!.id)).toMatchObject({ applied_revision: null, last_seen: null });

      // Any write moves the head: the device that was at head is now behind.
      await s.createGroup(org.id);
      const after = await s.ok<Convergence>(200, 'GET', paths.convergence(org.id));
      expect(after).toMatchObject({ revision: head + 1, at_head: 0, behind: 2, error: 1, stale: 1 });
      await put(atHead, report(head + 1));
      await put(behind, report(head + 1));
      expect(await s.ok<Convergence>(200, 'GET', paths.convergence(org.id))).toMatchObject({ at_head: 2, behind: 0 });
    });

    it('a device not seen for longer than the stale setting counts as stale', async () => {
      const s = h();
      const org = await s.createOrg();
      const d = await s.createDevice(org.id);
      await s.ok(200, 'PUT', paths.deviceStatus(org.id, d.id), { token: d.device_token, body: report(await s.head(org.id)) });
      expect((await s.ok<Convergence>(200, 'GET', paths.convergence(org.id))).at_head).toBe(1);
      const staleAfter = s.server.ctx.settings.staleAfter;
      await s.server.db.query(`UPDATE device_status SET last_seen = now() - make_interval(secs => $2) WHERE device_id = $1`, [d.id, staleAfter + 5]);
      expect(await s.ok<Convergence>(200, 'GET', paths.convergence(org.id))).toMatchObject({ at_head: 0, stale: 1 });
    });
  });
});
