import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  HEADERS,
  MEDIA,
  QUERY,
  WATCH_KINDS,
  bearerAuthorization,
  paths,
  type Convergence,
  type ConvergenceEvent,
  type Device,
  type EnrolledDevice,
} from '../../src/protocol/index.js';
import { backends } from '../server/fixtures.js';
import { StatusTunnel, statusReport } from './support/status-tunnel.js';
import { openWatch } from '../watch/support/watch-client.js';
import { delay, eventually, startWatchServer, type WatchServer } from '../watch/support/watch-server.js';
import { LineSplitter } from '../watch/support/ndjson.js';

const report = statusReport;

/** Write statements (status batches, presence) the server has run: INSERT, UPDATE, DELETE. */
async function writes(ws: WatchServer): Promise<number> {
  const m = await ws.server.ctx.metrics.dbQueries.get();
  return m.values.filter((v) => ['insert', 'update', 'delete'].includes(String(v.labels['statement']))).reduce((n, v) => n + v.value, 0);
}

describe.each(backends())('device statuses, presence and convergence on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      ws = await startWatchServer(name, { statusFlushInterval: 0.2, staleAfter: 90 });
    });
    afterAll(async () => {
      await ws.close();
    });

    const fleet = (n: number) => ws.h.createOrgWithDevices(n);

    it('PUTs from many devices are written in a few batches of one statement each, and answered after their batch', async () => {
      const { org, devices } = await fleet(40);
      const head = await ws.h.head(org);
      const batches = await ws.metric('fleetplane_status_batches_total');
      const before = await writes(ws);
      const answers = await Promise.all(
        devices.map((d) => ws.h.call('PUT', paths.deviceStatus(org, d.id), { token: d.device_token, body: report(head) })),
      );
      expect(answers.map((a) => a.statusCode)).toEqual(devices.map(() => 200));
      const madeBatches = (await ws.metric('fleetplane_status_batches_total')) - batches;
      // 40 PUTs inside one flush interval: one or two batches, each one statement.
      expect(madeBatches).toBeGreaterThanOrEqual(1);
      expect(madeBatches).toBeLessThanOrEqual(2);
      expect((await writes(ws)) - before).toBe(madeBatches);
      // Answered once committed: the status is readable at once.
      const c = await ws.h.ok<Convergence>(200, 'GET', paths.convergence(org));
      expect(c).toMatchObject({ devices: 40, at_head: 40 });
    });

    it('status frames on the tunnel are acknowledged once written, and the device counts as online while connected', async () => {
      const { org, devices } = await fleet(20);
      const head = await ws.h.head(org);
      const tunnels = await Promise.all(devices.map((d) => StatusTunnel.open(ws.url, d.device_token)));
      await eventually(async () => (await ws.h.ok<Convergence>(200, 'GET', paths.convergence(org))).online === 20, 'every device is online');
      const batches = await ws.metric('fleetplane_status_batches_total');
      const acks = await Promise.all(tunnels.map((t) => t.status(report(head))));
      expect(acks.every((a) => a.error === undefined)).toBe(true);
      expect((await ws.metric('fleetplane_status_batches_total')) - batches).toBeLessThanOrEqual(2);
      expect(await ws.h.ok<Convergence>(200, 'GET', paths.convergence(org))).toMatchObject({ devices: 20, at_head: 20, online: 20, stale: 0 });
      const one = await ws.h.ok<Device>(200, 'GET', paths.device(org, devices[0]!.id));
      expect(one.status).toMatchObject({ online: true, applied_revision: head, os: 'linux' });

      // The same status again costs no write: the tunnel is the liveness.
      const before = await writes(ws);
      const again = await Promise.all(tunnels.map((t) => t.status(report(head))));
      expect(again.every((a) => a.error === undefined)).toBe(true);
      expect(await writes(ws)).toBe(before);

      // An invalid status is refused with validation_failed; nothing is written.
      const bad = await tunnels[0]!.status({ applied_revision: 'x' });
      expect(bad.error?.code).toBe('validation_failed');

      // Idle connected devices cost no write at all.
      const idle = await writes(ws);
      await delay(600);
      expect(await writes(ws)).toBe(idle);

      // Disconnected: offline, last seen when they left.
      await Promise.all(tunnels.map((t) => t.close()));
      await eventually(async () => (await ws.h.ok<Convergence>(200, 'GET', paths.convergence(org))).online === 0, 'every device is offline');
      const gone = await ws.h.ok<Device>(200, 'GET', paths.device(org, devices[0]!.id));
      expect(gone.status.online).toBe(false);
      expect(Date.parse(gone.status.last_seen ?? '')).toBeGreaterThan(Date.now() - 60_000);
    });

    it('a status frame that asks only for errors is recorded without an answer, and answered when it is refused', async () => {
      const { org, devices } = await fleet(2);
      const [a, b] = devices as [EnrolledDevice, EnrolledDevice];
      const head = await ws.h.head(org);
      const t = await StatusTunnel.open(ws.url, a.device_token);
      const quiet = t.send(report(head), 'errors');
      await eventually(async () => (await ws.h.ok<Convergence>(200, 'GET', paths.convergence(org))).at_head === 1, 'the quiet status recorded');
      // Acks leave in the order their batches commit: once a later frame's ack is in, an ack of the quiet one would be too.
      expect((await t.status(report(head))).error).toBeUndefined();
      expect(t.acks.has(quiet)).toBe(false);
      expect((await t.status({ applied_revision: 'x' }, 'errors')).error?.code).toBe('validation_failed');
      // An unknown `ack` asks for the default: an ack either way.
      expect((await t.status(report(head), 'sometimes')).error).toBeUndefined();

      const tb = await StatusTunnel.open(ws.url, b.device_token);
      await ws.h.ok(204, 'DELETE', paths.device(org, b.id));
      expect((await tb.status(report(head), 'errors')).error?.code).toBe('not_found');
      await t.close();
      tb.ws.terminate();
    });

    it('a watch stream with the device token counts as presence too; a status of a deleted device is refused', async () => {
      const { org, devices } = await fleet(2);
      const [a, b] = devices as [EnrolledDevice, EnrolledDevice];
      const stream = await openWatch(ws.target(org, a.device_token), WATCH_KINDS.map((kind) => ({ kind })));
      await eventually(async () => (await ws.h.ok<Device>(200, 'GET', paths.device(org, a.id))).status.online, 'the watching device is online');
      const t = await StatusTunnel.open(ws.url, b.device_token);
      await ws.h.ok(204, 'DELETE', paths.device(org, b.id));
      const ack = await t.status(report(1));
      expect(ack.error?.code).toBe('not_found');
      stream.destroy();
      await eventually(async () => !(await ws.h.ok<Device>(200, 'GET', paths.device(org, a.id))).status.online, 'the device is offline after its stream closed');
      t.ws.terminate();
    });

    it('a device on a replica whose lease expired is not online, and stale when not seen for long', async () => {
      const { org, devices } = await fleet(1);
      const d = devices[0]!;
      const t = await StatusTunnel.open(ws.url, d.device_token);
      await t.status(report(await ws.h.head(org)));
      await eventually(async () => (await ws.h.ok<Device>(200, 'GET', paths.device(org, d.id))).status.online, 'online');
      // The replica "dies": its lease runs out while the tunnel stays (as a frozen process would leave it).
      await ws.server.db.query(`UPDATE replicas SET lease_expires_at = now() - interval '1 second'`);
      await ws.server.db.query(`UPDATE device_status SET last_seen = now() - interval '1 hour' WHERE device_id = $1`, [d.id]);
      const c = await ws.h.ok<Convergence>(200, 'GET', paths.convergence(org));
      expect(c).toMatchObject({ online: 0, stale: 1, at_head: 0 });
      expect((await ws.h.ok<Device>(200, 'GET', paths.device(org, d.id))).status.online).toBe(false);
      await ws.server.db.query(`UPDATE replicas SET lease_expires_at = now() + interval '1 hour'`);
      t.ws.terminate();
    });

    it('the convergence stream sends the current value, then a line when ACKs change it, with one read of the view per interval for all its followers', async () => {
      const { org, devices } = await fleet(10);
      const head = await ws.h.head(org);
      const lines: Convergence[][] = [[], [], []];
      const aborts = lines.map(() => new AbortController());
      const url = `${ws.url}${paths.convergence(org)}?${QUERY.watch}=true`;
      const counted = vi.spyOn(ws.server.ctx.store.convergence, 'of');
      const follow = lines.map(async (out, i) => {
        const res = await fetch(url, { headers: { [HEADERS.authorization]: bearerAuthorization(ws.h.admin) }, signal: aborts[i]!.signal });
        expect(res.headers.get(HEADERS.contentType)).toBe(MEDIA.watch);
        const split = new LineSplitter();
        const reader = res.body!.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return;
            for (const line of split.push(Buffer.from(value))) {
              const e = JSON.parse(line) as ConvergenceEvent;
              if (e.type === 'convergence') out.push(e.value);
            }
          }
        } catch (err) {
          if (!aborts[i]!.signal.aborted) throw err;
        }
      });
      await eventually(() => lines.every((l) => l.length === 1), 'the first line of every stream');
      expect(lines[0]![0]).toMatchObject({ devices: 10, at_head: 0 });
      const queries = await ws.metric('fleetplane_convergence_stream_queries_total');
      const tunnels = await Promise.all(devices.map((d) => StatusTunnel.open(ws.url, d.device_token)));
      await Promise.all(tunnels.map((t) => t.status(report(head))));
      await eventually(() => lines.every((l) => l.at(-1)?.at_head === 10), 'every stream sees all at head');
      const used = (await ws.metric('fleetplane_convergence_stream_queries_total')) - queries;
      // The three streams share each query; every line differs from the one before it.
      expect(used).toBeGreaterThanOrEqual(1);
      expect(lines[0]!.length).toBeLessThanOrEqual(used + 1);
      for (const l of lines) for (let i = 1; i < l.length; i++) expect(l[i]).not.toEqual(l[i - 1]);
      // The whole-fleet count ran once per stream, for its first line; the updates came from the view's deltas.
      expect(counted).toHaveBeenCalledTimes(3);
      counted.mockRestore();
      for (const a of aborts) a.abort();
      await Promise.all(follow);
      await Promise.all(tunnels.map((t) => t.close()));
    });
  });
});
