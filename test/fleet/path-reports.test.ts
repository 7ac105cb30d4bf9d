/**
 * Path reports (docs/protocol.md "Path reports"): the peers a device reports
 * with its status are stored, returned by GET and lists, validated, cost no
 * write when repeated, and counted by `fleetplane_devices_by_path`.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_REPORTED_PEERS,
  paths,
  type Device,
  type DeviceStatus,
  type DeviceStatusInput,
  type EnrolledDevice,
  type PeerPath,
} from '../../src/protocol/index.js';
import { backends, errorCode } from '../server/fixtures.js';
import { StatusTunnel } from './support/status-tunnel.js';
import { eventually, startWatchServer, type WatchServer } from '../watch/support/watch-server.js';

const key = (): string => randomBytes(32).toString('base64');

function peer(fields: Partial<PeerPath> = {}): PeerPath {
  return {
    public_key: key(),
    device_id: null,
    path: 'direct',
    via: null,
    relay_id: null,
    endpoint: '198.51.100.7:51820',
    latest_handshake: '2030-01-01T00:00:00.000Z',
    rx_bytes: 1_000,
    tx_bytes: 2_000,
    ...fields,
  };
}

const report = (peers?: PeerPath[], truncated?: boolean): DeviceStatusInput => ({
  applied_revision: 1,
  apply_error: null,
  local_endpoints: [],
  os: 'linux',
  agent_version: 'test',
  ...(peers === undefined ? {} : { peers }),
  ...(truncated === undefined ? {} : { peers_truncated: truncated }),
});

/** Write statements the server has run (status batches among them). */
async function writes(ws: WatchServer): Promise<number> {
  const m = await ws.server.ctx.metrics.dbQueries.get();
  return m.values.filter((v) => ['insert', 'update', 'delete'].includes(String(v.labels['statement']))).reduce((n, v) => n + v.value, 0);
}

describe.each(backends())('path reports on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      ws = await startWatchServer(name, { statusFlushInterval: 0.02 });
    });
    afterAll(async () => {
      await ws?.close();
    });

    const put = (org: string, d: EnrolledDevice, body: unknown) => ws.h.call('PUT', paths.deviceStatus(org, d.id), { token: d.device_token, body });
    const statusOf = async (org: string, d: { id: string }) => (await ws.h.ok<Device>(200, 'GET', paths.device(org, d.id))).status;

    it('stores the peers with the status and returns them from GET and lists; a device without a report has none', async () => {
      const org = (await ws.h.createOrg()).id;
      const [a, b, quiet] = [await ws.h.createDevice(org), await ws.h.createDevice(org), await ws.h.createDevice(org)];
      const peers = [
        peer({ public_key: b.public_key, device_id: b.id }),
        peer({ path: 'relay', via: 'server', relay_id: 'replica-1', endpoint: null, rx_bytes: 0 }),
        peer({ path: 'relay', via: `device:${b.id}` }),
        peer({ path: 'none', endpoint: null, latest_handshake: null, rx_bytes: 0, tx_bytes: 0 }),
      ];
      const res = await put(org, a, report(peers, true));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<DeviceStatus>()).toMatchObject({ peers, peers_truncated: true });

      expect(await statusOf(org, a)).toMatchObject({ applied_revision: 1, peers, peers_truncated: true });
      const listed = await ws.h.ok<{ items: Device[] }>(200, 'GET', paths.devices(org));
      const byId = new Map(listed.items.map((d) => [d.id, d]));
      expect(byId.get(a.id)?.status).toMatchObject({ peers, peers_truncated: true });
      expect(byId.get(quiet.id)?.status).toMatchObject({ peers: [], peers_truncated: false });
      // Not a field of the stored status: what reads every device's applied revision never decodes them.
      const rows = await ws.server.db.query<{ status: Record<string, unknown> }>('SELECT status FROM device_status WHERE device_id = $1', [a.id]);
      expect(Object.keys(rows[0]?.status ?? {})).not.toContain('peers');

      // A later report without peers (an agent before v1.9) leaves none.
      expect((await put(org, a, report())).statusCode).toBe(200);
      expect(await statusOf(org, a)).toMatchObject({ peers: [], peers_truncated: false });
    });

    it('keeps each device’s peers in its own organization', async () => {
      const one = (await ws.h.createOrg()).id;
      const two = (await ws.h.createOrg()).id;
      const a = await ws.h.createDevice(one);
      const b = await ws.h.createDevice(two);
      // `device_id` is kept as the agent reported it, even when it names a device elsewhere.
      const peers = [peer({ device_id: b.id, public_key: b.public_key })];
      expect((await put(one, a, report(peers))).statusCode).toBe(200);
      const listed = await ws.h.ok<{ items: Device[] }>(200, 'GET', paths.devices(two));
      expect(listed.items.map((d) => d.status.peers)).toEqual([[]]);
      expect(await statusOf(one, a)).toMatchObject({ peers });
      // A device token of the other organization can't read them.
      expect((await ws.h.call('GET', paths.device(one, a.id), { token: b.device_token })).statusCode).toBeGreaterThanOrEqual(403);
    });

    it('refuses invalid peers with 400 validation_failed, on PUT and on the tunnel, and records nothing', async () => {
      const org = (await ws.h.createOrg()).id;
      const d = await ws.h.createDevice(org);
      const invalid: [string, unknown][] = [
        ['a key that is not 32 bytes of base64', [{ ...peer(), public_key: 'not-a-key' }]],
        ['an unknown path', [{ ...peer(), path: 'carrier-pigeon' }]],
        ['a via outside its grammar', [peer({ path: 'relay', via: 'relay-7' })]],
        ['a via naming no device id', [peer({ path: 'relay', via: 'device:' })]],
        ['negative bytes', [peer({ rx_bytes: -1 })]],
        ['an unknown field', [{ ...peer(), latency_ms: 3 }]],
        [`more than ${MAX_REPORTED_PEERS} peers`, Array.from({ length: MAX_REPORTED_PEERS + 1 }, () => peer())],
      ];
      const t = await StatusTunnel.open(ws.url, d.device_token);
      try {
        for (const [what, peers] of invalid) {
          const res = await put(org, d, { ...report(), peers });
          expect(res.statusCode, what).toBe(400);
          expect(errorCode(res), what).toBe('validation_failed');
          expect((await t.status({ ...report(), peers })).error?.code, what).toBe('validation_failed');
        }
        expect((await statusOf(org, d)).applied_revision).toBeNull();
        // 1,024 is allowed.
        const most = Array.from({ length: MAX_REPORTED_PEERS }, () => peer());
        expect((await put(org, d, report(most, true))).statusCode).toBe(200);
        expect((await statusOf(org, d)).peers).toHaveLength(MAX_REPORTED_PEERS);
      } finally {
        await t.close();
      }
    });

    it('a status frame repeating the last one written, peers included, is acknowledged without a write; a peer that changed is written', async () => {
      const org = (await ws.h.createOrg()).id;
      const d = await ws.h.createDevice(org);
      const peers = [peer(), peer({ path: 'relay', via: 'server', relay_id: 'r1' })];
      const t = await StatusTunnel.open(ws.url, d.device_token);
      try {
        expect((await t.status(report(peers))).error).toBeUndefined();
        const before = await writes(ws);
        const unchanged = await ws.metric('fleetplane_statuses_unchanged_total');
        // The same report, parsed anew, each peer's fields in another order.
        const reordered = peers.map((p) => Object.fromEntries(Object.entries(p).reverse()));
        expect((await t.status(report(reordered as PeerPath[]))).error).toBeUndefined();
        expect(await writes(ws)).toBe(before);
        expect(await ws.metric('fleetplane_statuses_unchanged_total')).toBe(unchanged + 1);

        // One peer's bytes grew: written.
        const grown = [peers[0]!, { ...peers[1]!, rx_bytes: peers[1]!.rx_bytes + 8192 }];
        expect((await t.status(report(grown))).error).toBeUndefined();
        expect(await writes(ws)).toBeGreaterThan(before);
        expect((await statusOf(org, d)).peers).toEqual(grown);
      } finally {
        await t.close();
      }
    });

    it('fleetplane_devices_by_path counts the connected devices by the paths they report', async () => {
      const byKind = async () => ({
        direct: await ws.metric('fleetplane_devices_by_path', { kind: 'direct' }),
        relay: await ws.metric('fleetplane_devices_by_path', { kind: 'relay' }),
        none: await ws.metric('fleetplane_devices_by_path', { kind: 'none' }),
      });
      const start = await byKind();
      const org = (await ws.h.createOrg()).id;
      const devices = await Promise.all([1, 2, 3, 4, 5].map(() => ws.h.createDevice(org)));
      const [direct, relayed, waiting, alone, putOnly] = devices as [EnrolledDevice, EnrolledDevice, EnrolledDevice, EnrolledDevice, EnrolledDevice];
      const tunnels = await Promise.all([direct, relayed, waiting, alone].map((d) => StatusTunnel.open(ws.url, d.device_token)));
      const [tDirect, tRelayed, tWaiting, tAlone] = tunnels as [StatusTunnel, StatusTunnel, StatusTunnel, StatusTunnel];
      try {
        const none = peer({ path: 'none', latest_handshake: null });
        await tDirect.status(report([none, peer()]));
        await tRelayed.status(report([peer(), peer({ path: 'relay', via: 'server', relay_id: 'r1' })]));
        await tWaiting.status(report([none]));
        await tAlone.status(report());
        // A device that only PUTs holds no connection here: not counted (nothing would ever forget it).
        expect((await put(org, putOnly, report([peer()]))).statusCode).toBe(200);
        const delta = async () => {
          const now = await byKind();
          return { direct: now.direct - start.direct, relay: now.relay - start.relay, none: now.none - start.none };
        };
        expect(await delta()).toEqual({ direct: 1, relay: 1, none: 2 });

        // A device whose path changes moves between kinds.
        await tDirect.status(report([peer({ path: 'relay', via: `device:${relayed.id}` })]));
        expect(await delta()).toEqual({ direct: 0, relay: 2, none: 2 });
        // PUT from a connected device counts too.
        expect((await put(org, waiting, report([peer()]))).statusCode).toBe(200);
        expect(await delta()).toEqual({ direct: 1, relay: 2, none: 1 });

        // A device that leaves is no longer counted.
        await tRelayed.close();
        await eventually(async () => (await delta()).relay === 1, 'the relayed device forgotten');
        expect(await delta()).toEqual({ direct: 1, relay: 1, none: 1 });
        const text = await ws.server.ctx.metrics.registry.metrics();
        expect(text).toMatch(/^fleetplane_devices_by_path\{kind="relay"\} \d+$/m);
      } finally {
        await Promise.all([tDirect, tWaiting, tAlone].map((t) => t.close()));
      }
    });
  });
});
