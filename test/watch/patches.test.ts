import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS, applyPatch, paths, type DeviceObject, type Organization, type WatchEvent } from '../../src/protocol/index.js';
import { openWatch, untilTails, watchRequest, type WatchStream } from './support/watch-client.js';
import { startWatchServer, type WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { patchDevice } from './support/objects.js';

/** Takes events until the stream has sent `n` change, patch or delete events. */
async function objectEvents(s: WatchStream, n: number): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  while (out.length < n) {
    const e = await s.next();
    if (e === undefined) throw new Error(`stream ended after ${out.length} of ${n} events`);
    if (e.type === 'change' || e.type === 'patch' || e.type === 'delete') out.push(e);
  }
  return out;
}

const ENDPOINTS = [
  { source: 'stun', address: '203.0.113.9:41641' },
  { source: 'local', address: '10.0.0.9:51820' },
];

describe('patch events', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
  });
  afterAll(async () => {
    await ws.close();
  });

  it('go only to the kinds that asked, carry exactly the changed members, and rebuild the whole object', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id, { hostname: 'edge-1' });
    const withPatches = await openWatch(ws.target(org.id), [{ kind: 'device', patches: true }]);
    const without = await openWatch(ws.target(org.id), [{ kind: 'device' }]);
    const listed = (await untilTails(withPatches, 1)).find((e) => e.type === 'change');
    await untilTails(without, 1);
    if (listed?.type !== 'change') throw new Error('the list did not carry the device');
    const patchesBefore = await ws.metric('fleetplane_watch_patches_written_total');

    const moved = await patchDevice(ws.h, org.id, d.id, { endpoints: ENDPOINTS });
    const [p] = await objectEvents(withPatches, 1);
    const [c] = await objectEvents(without, 1);

    expect(c).toEqual({ kind: 'device', type: 'change', value: moved });
    if (p?.type !== 'patch') throw new Error(`expected a patch, got ${JSON.stringify(p)}`);
    expect(p.value.id).toBe(d.id);
    expect(p.value.revision).toBe(moved.revision);
    expect(p.value.from_revision).toBe(listed.value.revision);
    // Exactly the members whose value changed: the endpoints, and the update time with them.
    expect(Object.keys(p.value.set).sort()).toEqual(['endpoints', 'updated_at']);
    expect(applyPatch(listed.value as DeviceObject, p.value)).toEqual(moved);
    expect(await ws.metric('fleetplane_watch_patches_written_total')).toBe(patchesBefore + 1);
    withPatches.destroy();
    without.destroy();
  });

  it('follow a resumed stream, for every kind that asked, and the client ends with exactly the server state', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    const client = new ResumingClient('resumer', WATCH_KINDS, true);
    const first = await openWatch(ws.target(org.id), client.startSession());
    for (const e of await untilTails(first, WATCH_KINDS.length)) client.apply(e);
    first.destroy();

    // Two changes while away (the resume may read them from the database, which has only the last),
    // then one change of each of two kinds after it: patches on what the client holds.
    await patchDevice(ws.h, org.id, d.id, { hostname: 'away-1' });
    await patchDevice(ws.h, org.id, d.id, { endpoints: ENDPOINTS });
    const resumed = await openWatch(ws.target(org.id), client.startSession());
    const caughtUp = await objectEvents(resumed, 1);
    for (const e of caughtUp) client.apply(e);
    expect(caughtUp[0]?.type === 'error' ? 0 : caughtUp[0]?.value.revision).toBe(await ws.h.head(org.id));
    await ws.h.ok<Organization>(200, 'PATCH', paths.organization(org.id), { body: { description: 'after' } });
    await patchDevice(ws.h, org.id, d.id, { hostname: 'after' });
    const later = await objectEvents(resumed, 2);
    for (const e of later) client.apply(e);
    resumed.destroy();

    expect(later.map((e) => ('kind' in e ? `${e.kind} ${e.type}` : e.type))).toEqual(['organization patch', 'device patch']);
    expect(client.violations).toEqual([]);
    expect(client.patches).toBeGreaterThanOrEqual(2);
    expect(plain(client.state)).toEqual(plain(await serverState(ws.h, org.id)));
  });

  it('a resumed kind gets the changes up to the head its stream started at whole: its client may lack their bases', async () => {
    const org = await ws.h.createOrg();
    const x = await ws.h.createDevice(org.id, { hostname: 'x' });
    const y = await ws.h.createDevice(org.id, { hostname: 'y' });
    // A live watcher keeps the tail cache filled change by change, so each change below has its patch there.
    const live = await openWatch(ws.target(org.id), [{ kind: 'device', patches: true }]);
    await untilTails(live, 1);
    const p = await patchDevice(ws.h, org.id, x.id, { hostname: 'x1' });
    await objectEvents(live, 1);
    const q = await patchDevice(ws.h, org.id, y.id, { hostname: 'y1' });
    await objectEvents(live, 1);
    const r = await patchDevice(ws.h, org.id, x.id, { hostname: 'x2' });
    const [livePatch] = await objectEvents(live, 1);
    expect(livePatch).toMatchObject({ type: 'patch', value: { revision: r.revision, from_revision: p.revision } });

    // A client cut inside a catch-up can hold y at q and x still at its creation (the read that sent y found x
    // already at r), and resume from q at its tail. x at r must not come as a patch from p, which it never got.
    const resumed = await openWatch(ws.target(org.id), [{ kind: 'device', gt_revision: q.revision, at_tail: true, patches: true }]);
    const [next] = await objectEvents(resumed, 1);
    // Served from the tail cache (the live watcher keeps it), where x at r has its patch: still sent whole.
    expect(next).toEqual({ kind: 'device', type: 'change', value: r });
    // After the head it started at, patches again.
    const s = await patchDevice(ws.h, org.id, x.id, { hostname: 'x3' });
    const [after] = await objectEvents(resumed, 1);
    expect(after).toMatchObject({ type: 'patch', value: { revision: s.revision, from_revision: r.revision } });
    resumed.destroy();
    live.destroy();
  });

  it('a delete stays a delete, and an object made again is sent whole', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    const s = await openWatch(ws.target(org.id), [{ kind: 'device', patches: true }]);
    await untilTails(s, 1);
    await ws.h.ok(204, 'DELETE', paths.device(org.id, d.id));
    const again = await ws.h.createDevice(org.id);
    const events = await objectEvents(s, 2);
    expect(events.map((e) => e.type)).toEqual(['delete', 'change']);
    expect(events[1]).toMatchObject({ type: 'change', value: { id: again.id } });
    s.destroy();
  });

  it('the field is refused on other types, like any bad watch', async () => {
    const org = await ws.h.createOrg();
    const res = await watchRequest(ws.target(org.id), [{ kind: 'device', patches: 'yes' }]);
    expect(res.status).toBe(400);
    expect(res.code).toBe('validation_failed');
  });
});
