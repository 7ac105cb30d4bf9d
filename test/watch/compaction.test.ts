import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import { openWatch, watchRequest } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { deleteDevice, patchDevice } from './support/objects.js';
import { burst, openTracked } from './support/stall.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

async function compactedRevision(ws: WatchServer, org: string): Promise<number> {
  const rows = await ws.server.db.query<{ compacted_revision: number }>('SELECT compacted_revision FROM orgs WHERE id = $1', [org]);
  return Number(rows[0]?.compacted_revision ?? 0);
}

describe('compaction and watchers', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    // Tombstones live half a second; compaction runs ten times a second.
    ws = await startWatchServer('pglite', {
      tombstoneRetention: 0.5,
      compactionInterval: 0.1,
      tailCacheSize: 8,
      watchBufferLimit: 64 * 1024,
    });
  });
  afterAll(async () => {
    await ws.close();
  });

  it('answers 410 revision_compacted to a resume from before the compacted revision', async () => {
    const org = (await ws.h.createOrg()).id;
    const a = await ws.h.createDevice(org);
    await ws.h.createDevice(org);
    await deleteDevice(ws.h, org, a.id);
    const deletedAt = await ws.h.head(org);
    await eventually(async () => (await compactedRevision(ws, org)) >= deletedAt, 'the tombstone is compacted');

    const res = await watchRequest(ws.target(org), [
      { kind: 'security-group', gt_revision: deletedAt },
      { kind: 'device', gt_revision: deletedAt - 1 },
    ]);
    expect([res.status, res.code]).toEqual([410, 'revision_compacted']);
    expect(JSON.parse(res.text)).toMatchObject({ error: { details: { compacted_revision: deletedAt } } });

    // From the compacted revision itself, or from 0, the watch is fine.
    const ok = await openWatch(ws.target(org), [{ kind: 'device', gt_revision: deletedAt }]);
    expect(await ok.next()).toEqual({ kind: 'device', type: 'tail', value: { revision: deletedAt } });
    ok.destroy();
    const fresh = await openWatch(ws.target(org), ALL);
    await fresh.waitFor((e) => e.type === 'tail');
    fresh.destroy();
  });

  it('answers 410 too while other streams keep the organization cached', async () => {
    const org = (await ws.h.createOrg()).id;
    const keeper = await openWatch(ws.target(org), ALL);
    await keeper.waitFor((e) => e.type === 'tail');
    const a = await ws.h.createDevice(org);
    const b = await ws.h.createDevice(org);
    // Push revision 1 out of the 8-event ring: a resume from there must read the database.
    for (let i = 0; i < 10; i++) await patchDevice(ws.h, org, b.id, { hostname: `h${i}` });
    await deleteDevice(ws.h, org, a.id);
    const deletedAt = await ws.h.head(org);
    // The cache's last fill, before the tombstone is old enough to be compacted.
    await keeper.waitFor((e) => e.type === 'delete' && e.value.id === a.id);
    // Compaction moves no revision and rings no bell: the cache can't know of it by itself.
    await eventually(async () => (await compactedRevision(ws, org)) >= deletedAt, 'the tombstone is compacted');

    const res = await watchRequest(ws.target(org), [{ kind: 'device', gt_revision: 1 }]);
    expect([res.status, res.code]).toEqual([410, 'revision_compacted']);
    keeper.destroy();
  });

  it('ends with error revision_compacted a watcher that fell behind the compacted revision mid-stream', async () => {
    const org = (await ws.h.createOrg()).id;
    const doomed = [await ws.h.createDevice(org), await ws.h.createDevice(org), await ws.h.createDevice(org)];
    const keep = await ws.h.createDevice(org);
    const stalled = await openTracked(ws, org, { paused: true });
    // Fill its socket until the server stops writing to it.
    await burst(ws, org, stalled.watcher, () => stalled.watcher.paused);
    expect(stalled.watcher.paused).toBe(true);
    const position = stalled.watcher.position;

    // Deletes after its position, then enough changes to push them out of the 8-event ring...
    for (const d of doomed) await deleteDevice(ws.h, org, d.id);
    for (let i = 0; i < 10; i++) await patchDevice(ws.h, org, keep.id, { hostname: `push-${i}` });
    const head = await ws.h.head(org);
    // ... and out of the database.
    await eventually(async () => (await compactedRevision(ws, org)) > position, 'the deletes are compacted');
    expect(stalled.watcher.closed).toBe(false);

    stalled.stream.resume();
    const rest = await stalled.stream.rest(20_000);
    expect(rest.at(-1)).toMatchObject({ type: 'error', value: { code: 'revision_compacted' } });
    expect(rest.filter((e) => e.type === 'error')).toHaveLength(1);
    // Nothing it was sent lies beyond its position: it never saw the deletes.
    for (const e of rest) if (e.type === 'change' || e.type === 'delete') expect(e.value.revision).toBeLessThanOrEqual(position);
    expect((await stalled.stream.ended).complete).toBe(true);
    expect(head).toBeGreaterThan(position);
    expect(await ws.metric('fleetplane_watch_streams_ended_total', { reason: 'revision_compacted' })).toBe(1);
  });
});
