import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../server/fixtures.js';
import { openWatch, type WatchStream } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { patchDevice } from './support/objects.js';

const WATCHERS = 200;
const WRITES = 8;

interface Counters {
  fills: number;
  changes: number;
  catchUps: number;
  events: number;
  queries: number;
}

async function counters(ws: WatchServer): Promise<Counters> {
  return {
    fills: await ws.metric('fleetplane_watch_fill_queries_total'),
    changes: await ws.metric('fleetplane_watch_changes_total'),
    catchUps: await ws.metric('fleetplane_watch_catchup_queries_total'),
    events: await ws.metric('fleetplane_watch_events_written_total'),
    queries: await ws.metric('fleetplane_db_queries_total'),
  };
}

function delta(after: Counters, before: Counters): Counters {
  return {
    fills: after.fills - before.fills,
    changes: after.changes - before.changes,
    catchUps: after.catchUps - before.catchUps,
    events: after.events - before.events,
    queries: after.queries - before.queries,
  };
}

describe.each(backends())('fan-out on $name', ({ name, available }) => {
  describe.runIf(available)('one organization', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      ws = await startWatchServer(name);
    });
    afterAll(async () => {
      await ws?.close();
    });

    /** K sequential writes, each waited for on every stream before the next. */
    async function writeAndDeliver(org: string, device: string, streams: readonly WatchStream[]): Promise<Counters> {
      const before = await counters(ws);
      for (let i = 0; i < WRITES; i++) {
        const patched = await patchDevice(ws.h, org, device, { hostname: `round-${streams.length}-${i}` });
        await Promise.all(streams.map((s) => s.waitFor((e) => e.type === 'change' && e.value.revision === patched.revision)));
      }
      return delta(await counters(ws), before);
    }

    it(`reads each change once (one fill query) whether 1 or ${WATCHERS} streams watch`, async () => {
      const org = (await ws.h.createOrg()).id;
      const device = (await ws.h.createDevice(org)).id;
      const head = await ws.h.head(org);
      const resume = [
        { kind: 'device' as const, gt_revision: head, at_tail: true },
        { kind: 'organization' as const, gt_revision: head, at_tail: true },
      ];
      const streams: WatchStream[] = [await openWatch(ws.target(org), resume)];
      await eventually(() => ws.server.watch.watcherCount === 1, 'the first watcher is registered');
      const one = await writeAndDeliver(org, device, streams);
      expect(one).toMatchObject({ fills: WRITES, changes: WRITES, catchUps: 0, events: WRITES });

      const head2 = await ws.h.head(org);
      const more = resume.map((w) => ({ ...w, gt_revision: head2 }));
      while (streams.length < WATCHERS) {
        const n = Math.min(50, WATCHERS - streams.length);
        streams.push(...(await Promise.all(Array.from({ length: n }, () => openWatch(ws.target(org), more)))));
      }
      await eventually(() => ws.server.watch.watcherCount === WATCHERS, `${WATCHERS} watchers are registered`);
      // Drop what the first stream got before the others joined.
      while (streams[0] && streams[0].unread > 0) await streams[0].next();

      const many = await writeAndDeliver(org, device, streams);
      // One fill query per change, independent of the number of watchers; nobody reads the database on its own.
      expect(many).toMatchObject({ fills: WRITES, changes: WRITES, catchUps: 0, events: WRITES * WATCHERS });
      // Every database query of a change (the write's own, and the fill) is the same with 200 watchers as with 1.
      expect(many.queries).toBe(one.queries);
      expect(many.queries / WRITES).toBeLessThanOrEqual(12);
      for (const s of streams) s.destroy();
    });
  });
});
