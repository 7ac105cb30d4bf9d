import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { paths, type Convergence, type DeviceStatusInput, type Organization } from '../../src/protocol/index.js';
import { DEVICE_TOTAL_STATES } from '../../src/server/store/index.js';
import { Harness, uniqueName } from '../server/fixtures.js';
import { openWatch, type WatchStream } from '../watch/support/watch-client.js';
import { startWatchServer, type WatchServer } from '../watch/support/watch-server.js';

const ACK_LATENCY = 'fleetplane_device_ack_latency_seconds';

const report = (applied: number | null, error: string | null = null): DeviceStatusInput => ({
  applied_revision: applied,
  apply_error: error,
  local_endpoints: [],
  os: 'linux',
  agent_version: 'test',
});

/** How many ACKs the latency histogram has timed. */
async function ackCount(ws: WatchServer): Promise<number> {
  const data = await ws.server.ctx.metrics.registry.getSingleMetric(ACK_LATENCY)?.get();
  return data?.values.find((v) => 'metricName' in v && v.metricName === `${ACK_LATENCY}_count`)?.value ?? Number.NaN;
}

/** `fleetplane_devices` as the registry reports it at scrape time, by state. */
async function deviceGauge(ws: WatchServer): Promise<Record<string, number>> {
  const data = await ws.server.ctx.metrics.registry.getSingleMetric('fleetplane_devices')?.get();
  return Object.fromEntries((data?.values ?? []).map((v) => [String(v.labels['state']), v.value]));
}

describe('fleet metrics: devices by state, ACK latency (PGlite)', () => {
  let ws: WatchServer;
  let h: Harness;
  beforeAll(async () => {
    ws = await startWatchServer('pglite', { statusFlushInterval: 0.02 });
    h = ws.h;
  });
  afterAll(async () => {
    await ws.close();
  });

  const put = (org: string, device: { id: string; device_token: string }, status: DeviceStatusInput) =>
    h.ok(200, 'PUT', paths.deviceStatus(org, device.id), { token: device.device_token, body: status });

  it('an ACK is timed once per device and revision, from the fan-out of that revision; NACKs and repeats are not', async () => {
    const org = await h.createOrg();
    const a = await h.createDevice(org.id);
    const b = await h.createDevice(org.id);
    const watch: WatchStream = await openWatch(ws.target(org.id), [{ kind: 'organization' }]);
    try {
      await watch.waitFor((e) => e.type === 'tail');
      const changed = await h.ok<Organization>(200, 'PATCH', paths.organization(org.id), { body: { description: 'v2' } });
      // The watcher has the change: the head reached the tail cache and its fan-out started.
      await watch.waitFor((e) => e.type === 'change' && e.value.revision === changed.revision);
      const before = await ackCount(ws);

      await put(org.id, a, report(changed.revision));
      expect(await ackCount(ws)).toBe(before + 1);
      // The same revision again (a periodic report, a reconnection) is not a new ACK.
      await put(org.id, a, { ...report(changed.revision), local_endpoints: ['192.0.2.1:51820'] });
      expect(await ackCount(ws)).toBe(before + 1);
      // A NACK is not an ACK; applying it afterwards is.
      await put(org.id, b, report(changed.revision, 'nft: syntax error'));
      expect(await ackCount(ws)).toBe(before + 1);
      await put(org.id, b, report(changed.revision));
      expect(await ackCount(ws)).toBe(before + 2);
    } finally {
      watch.destroy();
    }
  });

  it('an ACK of a revision this replica did not fan out (no watcher of its organization here) is not timed', async () => {
    const org = await h.createOrg();
    const d = await h.createDevice(org.id);
    const changed = await h.ok<Organization>(200, 'PATCH', paths.organization(org.id), { body: { description: 'v2' } });
    const before = await ackCount(ws);
    await put(org.id, d, report(changed.revision));
    expect(await ackCount(ws)).toBe(before);
  });

  it('fleetplane_devices is the sum of every organization’s convergence, by state, from one shared read', async () => {
    const orgs = [await h.createOrg(), await h.createOrg({ name: uniqueName('second') })];
    const [one, two] = orgs as [Organization, Organization];
    const atHead = await h.createDevice(one.id);
    const failing = await h.createDevice(one.id);
    const behind = await h.createDevice(two.id);
    await h.createDevice(two.id); // never reported: stale
    const head = (org: string) => h.ok<Convergence>(200, 'GET', paths.convergence(org)).then((c) => c.revision);
    await put(one.id, atHead, report(await head(one.id)));
    await put(one.id, failing, report(await head(one.id), 'boom'));
    await put(two.id, behind, report(0));

    const reads = vi.spyOn(ws.server.ctx.store.convergence, 'deviceTotals');
    try {
      // Concurrent scrapes share one read (and later ones within its lifetime reuse it).
      const [gauge] = await Promise.all([deviceGauge(ws), deviceGauge(ws), deviceGauge(ws)]);
      expect(reads).toHaveBeenCalledTimes(1);

      const all = await h.ok<{ items: Organization[] }>(200, 'GET', paths.organizations());
      const expected: Record<string, number> = Object.fromEntries(DEVICE_TOTAL_STATES.map((s) => [s, 0]));
      for (const org of all.items) {
        const c = await h.ok<Convergence>(200, 'GET', paths.convergence(org.id));
        for (const s of DEVICE_TOTAL_STATES) expected[s] = (expected[s] ?? 0) + c[s];
      }
      expect(gauge).toEqual(expected);
      // This test's own devices are in it, in each state.
      for (const s of ['at_head', 'error', 'behind', 'stale', 'online'] as const) expect(gauge?.[s], s).toBeGreaterThan(0);
    } finally {
      reads.mockRestore();
    }
  });
});
