import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEDIA, MAX_WATCHES, WATCH_KINDS, paths, type Organization, type WatchEvent } from '../../src/protocol/index.js';
import { openWatch, watchRequest, type WatchSpec, type WatchStream } from './support/watch-client.js';
import { startWatchServer, type WatchServer } from './support/watch-server.js';
import { ResumingClient, plain, serverState } from './support/client-state.js';
import { deleteDevice, ofType, patchDevice, summary } from './support/objects.js';

const ALL_FROM_0: WatchSpec[] = WATCH_KINDS.map((kind) => ({ kind }));

/** Takes events until every kind in `kinds` has sent its tail. */
async function untilTails(s: WatchStream, kinds: readonly string[]): Promise<WatchEvent[]> {
  const pending = new Set(kinds);
  const out: WatchEvent[] = [];
  while (pending.size > 0) {
    const e = await s.next();
    if (e === undefined) throw new Error(`stream ended before the tails of ${[...pending].join(', ')}`);
    out.push(e);
    if (e.type === 'tail') pending.delete(e.kind);
  }
  return out;
}

describe('watch protocol', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
  });
  afterAll(async () => {
    await ws.close();
  });

  it('answers application/json;stream=watch and sends the head before any event', async () => {
    const org = await ws.h.createOrg();
    const head = await ws.h.head(org.id);
    // At the head with every tail seen: nothing to send, yet the response must arrive.
    const s = await openWatch(
      ws.target(org.id),
      WATCH_KINDS.map((kind) => ({ kind, gt_revision: head, at_tail: true })),
    );
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toBe(MEDIA.watch);
    expect(s.events).toEqual([]);
    const patched = await ws.h.ok<Organization>(200, 'PATCH', paths.organization(org.id), { body: { description: 'first' } });
    expect(await s.next()).toEqual({ kind: 'organization', type: 'change', value: patched });
    s.destroy();
  });

  it('lists every object from 0, then one tail per kind at the head revision', async () => {
    const org = await ws.h.createOrg();
    const group = await ws.h.createGroup(org.id, { description: 'g1' });
    await ws.h.createGroup(org.id, { description: 'g2' });
    for (let i = 0; i < 3; i++) await ws.h.createDevice(org.id, { security_group_id: group.id });
    await ws.h.ok(200, 'PATCH', paths.organization(org.id), { body: { description: 'patched' } });
    const head = await ws.h.head(org.id);

    const s = await openWatch(ws.target(org.id), ALL_FROM_0);
    const events = await untilTails(s, WATCH_KINDS);
    const client = new ResumingClient('c');
    client.startSession();
    for (const e of events) client.apply(e);
    expect(client.violations).toEqual([]);

    const changes = ofType(events, 'change');
    expect(changes).toHaveLength(3 + 2 + 1);
    expect(ofType(events, 'delete')).toEqual([]);
    // Tails come last, each at the head.
    expect(events.slice(-3).map((e) => e.type)).toEqual(['tail', 'tail', 'tail']);
    for (const t of ofType(events, 'tail')) expect(t.value.revision).toBe(head);
    expect(new Set(ofType(events, 'tail').map((t) => t.kind))).toEqual(new Set(WATCH_KINDS));
    expect(plain(client.state)).toEqual(plain(await serverState(ws.h, org.id)));
    s.destroy();
  });

  it('streams only the kinds asked for, each kind once with its own revision', async () => {
    const org = await ws.h.createOrg();
    await ws.h.createGroup(org.id);
    const d = await ws.h.createDevice(org.id);
    const s = await openWatch(ws.target(org.id), [{ kind: 'device' }]);
    const events = await untilTails(s, ['device']);
    expect(summary(events)).toEqual([`device change ${d.id}`]);
    const head = await ws.h.head(org.id);
    expect(events.at(-1)).toEqual({ kind: 'device', type: 'tail', value: { revision: head } });
    // A security group change is not this stream's business; the next device change is.
    await ws.h.createGroup(org.id);
    const patched = await patchDevice(ws.h, org.id, d.id, { hostname: 'renamed' });
    expect(await s.next()).toEqual({ kind: 'device', type: 'change', value: patched });
    s.destroy();
  });

  it('sends no tail for a kind watched with at_tail', async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    const head = await ws.h.head(org.id);
    const s = await openWatch(ws.target(org.id), [
      { kind: 'device', gt_revision: head, at_tail: true },
      { kind: 'security-group', gt_revision: head },
    ]);
    expect(await s.next()).toEqual({ kind: 'security-group', type: 'tail', value: { revision: head } });
    const patched = await patchDevice(ws.h, org.id, d.id, { relay: true });
    expect(await s.next()).toEqual({ kind: 'device', type: 'change', value: patched });
    expect(ofType(s.events, 'tail').map((t) => t.kind)).toEqual(['security-group']);
    s.destroy();
  });

  describe('errors before streaming', () => {
    let org: Organization;
    let other: Organization;
    beforeAll(async () => {
      org = await ws.h.createOrg();
      other = await ws.h.createOrg();
    });

    const invalid: [string, unknown][] = [
      ['an unknown kind', [{ kind: 'router' }]],
      ['a duplicate kind', [{ kind: 'device' }, { kind: 'security-group' }, { kind: 'device', gt_revision: 3 }]],
      ['an unknown field', [{ kind: 'device', since: 3 }]],
      ['an empty array', []],
      ['more than 16 watches', Array.from({ length: MAX_WATCHES + 1 }, () => ({ kind: 'device' }))],
      ['a non-numeric gt_revision', [{ kind: 'device', gt_revision: 'five' }]],
      ['a numeric string gt_revision', [{ kind: 'device', gt_revision: '5' }]],
      ['a null gt_revision', [{ kind: 'device', gt_revision: null }]],
      ['a string "true" at_tail', [{ kind: 'device', at_tail: 'true' }]],
      ['a negative gt_revision', [{ kind: 'device', gt_revision: -1 }]],
      ['a fractional gt_revision', [{ kind: 'device', gt_revision: 1.5 }]],
      ['a string at_tail', [{ kind: 'device', at_tail: 'yes' }]],
      ['a missing kind', [{ gt_revision: 0 }]],
      ['an object instead of an array', { kind: 'device' }],
      ['a watch that is not an object', ['device']],
    ];
    it.each(invalid)('400 validation_failed for %s', async (_name, body) => {
      const res = await watchRequest(ws.target(org.id), body);
      expect(res.status).toBe(400);
      expect(res.code).toBe('validation_failed');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    });

    it('401 without a token or with an unknown one', async () => {
      const none = await watchRequest({ ...ws.target(org.id), token: undefined }, ALL_FROM_0);
      expect([none.status, none.code]).toEqual([401, 'unauthorized']);
      const bogus = await watchRequest(ws.target(org.id, 'fpt_not-a-real-token'), ALL_FROM_0);
      expect([bogus.status, bogus.code]).toEqual([401, 'unauthorized']);
    });

    it('403 for a registration key', async () => {
      const key = await ws.h.createRegKey(org.id);
      const res = await watchRequest(ws.target(org.id, key.key), ALL_FROM_0);
      expect([res.status, res.code]).toEqual([403, 'forbidden']);
    });

    it("404 for another organization's tokens and for an unknown organization", async () => {
      const orgToken = await ws.h.createToken(other.id, 'read');
      const device = await ws.h.createDevice(other.id);
      for (const [who, token] of [['org token', orgToken], ['device token', device.device_token]] as const) {
        const res = await watchRequest(ws.target(org.id, token), ALL_FROM_0);
        expect([who, res.status, res.code, res.status === 200 ? res.text : '']).toEqual([who, 404, 'not_found', '']);
        // The same token may watch its own organization.
        const own = await openWatch(ws.target(other.id, token), ALL_FROM_0);
        expect(own.status).toBe(200);
        own.destroy();
      }
      const unknown = await watchRequest(ws.target('7b0a3c8e-7a57-4f43-9c1e-3c0b0b6b9f00'), ALL_FROM_0);
      expect([unknown.status, unknown.code]).toEqual([404, 'not_found']);
    });
  });

  it('sends no deletes during an initial list from 0', async () => {
    const org = await ws.h.createOrg();
    const devices = [];
    for (let i = 0; i < 5; i++) devices.push(await ws.h.createDevice(org.id));
    for (const d of devices.slice(0, 3)) await deleteDevice(ws.h, org.id, d.id);
    const s = await openWatch(ws.target(org.id), [{ kind: 'device' }]);
    const events = await untilTails(s, ['device']);
    expect(summary(events).sort()).toEqual(devices.slice(3).map((d) => `device change ${d.id}`).sort());
    s.destroy();
  });

  it('sends every delete after a gt_revision > 0, before and after the tail', async () => {
    const org = await ws.h.createOrg();
    const [a, b, c] = [await ws.h.createDevice(org.id), await ws.h.createDevice(org.id), await ws.h.createDevice(org.id)];
    const since = await ws.h.head(org.id);
    await deleteDevice(ws.h, org.id, a.id);
    const s = await openWatch(ws.target(org.id), [{ kind: 'device', gt_revision: since }]);
    const before = await untilTails(s, ['device']);
    expect(summary(before)).toEqual([`device delete ${a.id}`]);
    const tombstone = ofType(before, 'delete')[0];
    expect(tombstone?.value).toMatchObject({ id: a.id, hostname: a.hostname, revision: since + 1 });
    await deleteDevice(ws.h, org.id, b.id);
    expect(summary([await s.waitFor((e) => e.type === 'delete')])).toEqual([`device delete ${b.id}`]);
    const patched = await patchDevice(ws.h, org.id, c.id, { hostname: 'still-here' });
    expect(await s.next()).toEqual({ kind: 'device', type: 'change', value: patched });
    s.destroy();
  });

  it('does not resurrect objects deleted before the watch when its list runs past a catch-up page into the ring', async () => {
    const org = await ws.h.createOrg();
    // An open watcher keeps the organization's ring filled from the start.
    const keeper = await openWatch(ws.target(org.id), [{ kind: 'security-group' }]);
    await untilTails(keeper, ['security-group']);
    const ids: string[] = [];
    for (let i = 0; i < 520; i++) ids.push((await ws.h.createGroup(org.id, { description: `g${i}` })).id);
    for (const id of ids.slice(-5)) await ws.h.ok(204, 'DELETE', paths.securityGroup(org.id, id));
    await keeper.waitFor((e) => e.type === 'delete' && e.value.id === ids.at(-1));

    const s = await openWatch(ws.target(org.id), [{ kind: 'security-group' }]);
    const events = await untilTails(s, ['security-group']);
    const client = new ResumingClient('c', ['security-group']);
    client.startSession();
    for (const e of events) client.apply(e);
    expect(client.violations).toEqual([]);
    expect(ofType(events, 'delete')).toEqual([]);
    expect(plain(client.state)['security-group']).toEqual(plain(await serverState(ws.h, org.id))['security-group']);
    s.destroy();
    keeper.destroy();
  });

  /**
   * THE ORIGINAL BUG: a stream that breaks before its tail and resumes from its
   * last revision with at_tail=false must still get the deletes of objects it
   * received. Both paths: the database (no ring covers the resume point: the
   * feed is made anew at the head) and the ring (a keeper stream holds the feed).
   */
  it.each([
    { path: 'database catch-up', keeper: false },
    { path: 'tail cache ring', keeper: true },
  ])('a stream broken before its tail resumes with the deletes of objects it received ($path)', async ({ keeper }) => {
    const org = await ws.h.createOrg();
    const keep = keeper ? await openWatch(ws.target(org.id), ALL_FROM_0) : undefined;
    const devices = [];
    for (let i = 0; i < 30; i++) devices.push(await ws.h.createDevice(org.id));

    // Devices only: a kind with nothing seen yet would resume from 0 and list from the database.
    const client = new ResumingClient('c', ['device']);
    const first = await openWatch(ws.target(org.id), client.startSession());
    for (const e of await first.take(6)) client.apply(e);
    first.destroy();
    await first.ended;
    expect(client.atTail).toBe(false);
    const received = [...client.state.device.keys()];
    expect(received).toHaveLength(6);

    const deleted = received.slice(0, 3);
    for (const id of deleted) await deleteDevice(ws.h, org.id, id);
    const notYetReceived = devices.find((d) => !client.state.device.has(d.id));
    if (notYetReceived) await deleteDevice(ws.h, org.id, notYetReceived.id);
    if (keep) await keep.waitFor((e) => e.type === 'delete' && e.value.id === (notYetReceived?.id ?? deleted[2]));

    const catchUpsBefore = await ws.metric('fleetplane_watch_catchup_queries_total');
    const second = await openWatch(ws.target(org.id), client.startSession());
    for (const e of await untilTails(second, ['device'])) client.apply(e);
    second.destroy();
    keep?.destroy();
    const catchUps = (await ws.metric('fleetplane_watch_catchup_queries_total')) - catchUpsBefore;
    if (keeper) expect(catchUps).toBe(0);
    else expect(catchUps).toBeGreaterThan(0);

    expect(client.violations).toEqual([]);
    const deletes = ofType(second.events, 'delete').map((e) => e.value.id);
    for (const id of deleted) expect(deletes).toContain(id);
    expect(plain(client.state).device).toEqual(plain(await serverState(ws.h, org.id)).device);
  });
});
