import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthError,
  CompactedError,
  FleetplaneClient,
  NotFoundError,
  ValidationError,
  type FleetplaneError,
  type StreamEvent,
  type Watch,
} from '../../src/client/index.js';
import { byId, startRealServer, uniqueName, wgKey, withoutStatus, type RealServer } from './support/real-server.js';

const BOOKMARK_S = 0.1;
const ALL: Watch[] = [{ kind: 'device' }, { kind: 'security-group' }, { kind: 'organization' }];

let rs: RealServer;
beforeAll(async () => {
  rs = await startRealServer({ bookmarkInterval: BOOKMARK_S, revocationCheckInterval: 0.1 });
});
afterAll(async () => {
  await rs?.close();
});

/** Reads events until `stop` says so; the hang guard aborts the stream. */
async function readUntil(events: AsyncIterator<StreamEvent>, stop: (e: StreamEvent, seen: StreamEvent[]) => boolean): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for (;;) {
    const r = await events.next();
    if (r.done) throw new Error(`the stream ended after ${JSON.stringify(seen)}`);
    seen.push(r.value);
    if (stop(r.value, seen)) return seen;
  }
}

async function failure(events: AsyncIterator<StreamEvent>): Promise<FleetplaneError> {
  try {
    for (;;) if ((await events.next()).done) break;
  } catch (err) {
    return err as FleetplaneError;
  }
  throw new Error('expected the stream to fail');
}

const describeEvent = (e: StreamEvent): string =>
  e.type === 'bookmark' ? 'bookmark' : e.type === 'tail' ? `${e.kind} tail ${e.value.revision}` : `${e.kind} ${e.type} ${e.value.id}@${e.value.revision}`;

describe('watchEvents against the real server', () => {
  it('lists every kind up to one tail each, then follows changes and deletes, with bookmarks while idle', async () => {
    const org = await rs.admin.organizations.create({ name: uniqueName('watch') });
    const key = await rs.admin.registrationKeys.create(org.id);
    const enrolled = await rs.admin.devices.enroll(org.id, key.key, { hostname: 'agent', public_key: wgKey() });
    const d1 = await rs.admin.devices.get(org.id, enrolled.id);
    const d2 = await rs.admin.devices.get(org.id, (await rs.admin.devices.create(org.id, { hostname: 'd2', public_key: wgKey() })).id);
    const g1 = await rs.admin.securityGroups.create(org.id, { description: 'g1' });
    const head = (await rs.admin.devices.list(org.id)).revision ?? 0;

    const stop = new AbortController();
    const guard = setTimeout(() => stop.abort(), 20_000);
    const events = rs.admin.watchEvents(org.id, ALL, { signal: stop.signal });
    try {
      const listed = await readUntil(events, (_e, seen) => seen.filter((x) => x.type === 'tail').length === 3);
      const nonBookmarks = listed.filter((e) => e.type !== 'bookmark').map(describeEvent).sort();
      expect(nonBookmarks).toEqual(
        [
          `device change ${d1.id}@${d1.revision}`,
          `device change ${d2.id}@${d2.revision}`,
          `device tail ${head}`,
          `organization change ${org.id}@${org.revision}`,
          `organization tail ${head}`,
          `security-group change ${g1.id}@${g1.revision}`,
          `security-group tail ${head}`,
        ].sort(),
      );
      // Values are the objects themselves; devices without `status`.
      const devices = listed.flatMap((e) => (e.type === 'change' && e.kind === 'device' ? [e.value] : []));
      expect(byId(devices)).toEqual(byId([withoutStatus(d1), withoutStatus(d2)]));
      expect(listed.find((e) => e.type === 'change' && e.kind === 'security-group')?.value).toEqual(g1);

      const renamed = await rs.admin.devices.update(org.id, d2.id, { hostname: 'd2-renamed' });
      await rs.admin.devices.delete(org.id, d2.id);
      const followed = await readUntil(events, (e) => e.type === 'delete');
      const changes = followed.filter((e) => e.type !== 'bookmark');
      expect(changes.map(describeEvent)).toEqual([`device change ${d2.id}@${renamed.revision}`, `device delete ${d2.id}@${renamed.revision + 1}`]);
      // A delete carries the last state at the revision of the delete.
      const deleted = changes[1];
      expect(deleted?.type === 'delete' && deleted.value).toEqual({ ...withoutStatus(renamed), revision: renamed.revision + 1 });

      // Idle now: bookmarks at the head.
      const [bookmark] = (await readUntil(events, (e) => e.type === 'bookmark')).slice(-1);
      expect(bookmark).toEqual({ type: 'bookmark', value: { revision: renamed.revision + 1 } });

      // A status report changes no revision and sends no event: what comes next is another bookmark.
      const self = new FleetplaneClient({ baseUrl: rs.url, token: enrolled.device_token });
      await self.devices.putStatus(org.id, d1.id, { online: true, applied_revision: 1, apply_error: null, local_endpoints: [], os: null, agent_version: null });
      expect(await events.next()).toEqual({ done: false, value: { type: 'bookmark', value: { revision: renamed.revision + 1 } } });

      stop.abort();
      expect(await events.next()).toEqual({ done: true, value: undefined });
    } finally {
      clearTimeout(guard);
      stop.abort();
    }
  });

  it('resumes from a revision with at_tail: only later changes, no second tail', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('resume') })).id;
    const a = await rs.admin.securityGroups.create(org, { description: 'a' });
    const b = await rs.admin.securityGroups.create(org, { description: 'b' });
    const stop = new AbortController();
    const guard = setTimeout(() => stop.abort(), 20_000);
    try {
      const events = rs.admin.watchEvents(org, [{ kind: 'security-group', gt_revision: a.revision, at_tail: true }], { signal: stop.signal });
      const seen = await readUntil(events, (e) => e.type === 'bookmark');
      expect(seen.map(describeEvent)).toEqual([`security-group change ${b.id}@${b.revision}`, 'bookmark']);
    } finally {
      clearTimeout(guard);
      stop.abort();
    }
  });

  it('ends the iteration on abort, even while waiting for the next event', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('abort') })).id;
    const head = (await rs.admin.devices.list(org)).revision;
    const stop = new AbortController();
    const events = rs.admin.watchEvents(org, [{ kind: 'device' }], { signal: stop.signal });
    expect((await events.next()).value).toEqual({ kind: 'device', type: 'tail', value: { revision: head } });
    const pending = events.next();
    stop.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    // An already aborted signal yields nothing.
    const none = rs.admin.watchEvents(org, [{ kind: 'device' }], { signal: stop.signal });
    expect(await none.next()).toEqual({ done: true, value: undefined });
  });

  it('throws the typed errors of a rejected watch: 400, 404, 410', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('rejects') })).id;
    const dup = await failure(rs.admin.watchEvents(org, [{ kind: 'device' }, { kind: 'device' }]));
    expect([dup instanceof ValidationError, dup.status, dup.code]).toEqual([true, 400, 'validation_failed']);
    const missing = await failure(rs.admin.watchEvents('00000000-0000-4000-8000-000000000000', [{ kind: 'device' }]));
    expect([missing instanceof NotFoundError, missing.status]).toEqual([true, 404]);

    const d = await rs.admin.devices.create(org, { hostname: 'gone', public_key: wgKey() });
    await rs.admin.devices.create(org, { hostname: 'stays', public_key: wgKey() });
    await rs.admin.devices.delete(org, d.id);
    await rs.server.ctx.store.changes.compact(0);
    const compacted = await failure(rs.admin.watchEvents(org, [{ kind: 'device', gt_revision: d.revision }]));
    expect([compacted instanceof CompactedError, compacted.status, compacted.code]).toEqual([true, 410, 'revision_compacted']);
  });

  it("throws AuthError forbidden when the server ends the stream for a revoked token", async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('revoked') })).id;
    const token = await rs.admin.tokens.create(org, { role: 'read' });
    const reader = new FleetplaneClient({ baseUrl: rs.url, token: token.token });
    const events = reader.watchEvents(org, ALL, { signal: AbortSignal.timeout(20_000) });
    await readUntil(events, (_e, seen) => seen.filter((x) => x.type === 'tail').length === 3);
    await rs.admin.tokens.delete(org, token.id);
    const err = await failure(events);
    expect([err instanceof AuthError, err.status, err.code]).toEqual([true, 403, 'forbidden']);
    expect(err.details).toEqual({ from: 'watch_stream' });
  });

  it('lists a device exactly as REST returns it, minus status', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('shape') })).id;
    await rs.admin.devices.create(org, {
      hostname: 'full',
      public_key: wgKey(),
      advertise_cidrs: ['192.168.10.0/24'],
      endpoints: [{ source: 'manual', address: '203.0.113.7:51820' }],
      relay: true,
      symmetric_nat: true,
    });
    const events = rs.admin.watchEvents(org, [{ kind: 'device' }], { signal: AbortSignal.timeout(20_000) });
    const seen = await readUntil(events, (e) => e.type === 'tail');
    await events.return(undefined);
    const values = seen.flatMap((e) => (e.type === 'change' ? [e.value] : []));
    expect(byId(values)).toEqual(byId((await rs.admin.devices.list(org)).items.map(withoutStatus)));
  });
});
