import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths, type Organization, type WatchEvent } from '../../src/protocol/index.js';
import { FleetplaneClient, type StreamEvent } from '../../src/client/index.js';
import { policyDocument } from '../../src/bench/measure/policy-document.js';
import { openWatch, untilTails, type WatchSpec, type WatchStream } from './support/watch-client.js';
import { startWatchServer, type WatchServer } from './support/watch-server.js';

/** The next change, patch, delete or gzip event of the stream. */
async function nextObjectEvent(s: WatchStream): Promise<WatchEvent> {
  for (;;) {
    const e = await s.next();
    if (e === undefined) throw new Error('the stream ended');
    if (e.type === 'change' || e.type === 'patch' || e.type === 'delete' || e.type === 'gzip') return e;
  }
}

function unpacked(e: WatchEvent): unknown {
  if (e.type !== 'gzip') throw new Error(`expected a gzip event, got ${JSON.stringify(e).slice(0, 200)}`);
  return JSON.parse(gunzipSync(Buffer.from(e.value.data, 'base64')).toString('utf8'));
}

describe('gzip events', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
  });
  afterAll(async () => {
    await ws.close();
  });

  async function applyDocument(org: string, shift: number): Promise<number> {
    const res = await ws.h.call('PUT', paths.policy(org), { token: ws.h.admin, payload: policyDocument(shift), headers: { [HEADERS.contentType]: MEDIA.yaml } });
    if (res.statusCode !== 200) throw new Error(`PUT policy: ${res.statusCode} ${res.body}`);
    return (res.json() as { revision: number }).revision;
  }

  async function opened(org: string, specs: WatchSpec[]): Promise<WatchStream[]> {
    const streams = await Promise.all(specs.map((spec) => openWatch(ws.target(org), [spec])));
    for (const s of streams) await untilTails(s, 1);
    return streams;
  }

  it('pack a large line once for the watches that asked, as the very line the others get; small lines stay plain', async () => {
    const org = await ws.h.createOrg();
    // The first document: the organization's own event carries the compiled policy (tens of KiB).
    const [gzipPatches, gzipWhole, patches, whole] = await opened(org.id, [
      { kind: 'organization', patches: true, gzip: true },
      { kind: 'organization', gzip: true },
      { kind: 'organization', patches: true },
      { kind: 'organization' },
    ]);
    if (!gzipPatches || !gzipWhole || !patches || !whole) throw new Error('four streams');
    const gzipBefore = await ws.metric('fleetplane_watch_gzip_written_total');
    const patchesBefore = await ws.metric('fleetplane_watch_patches_written_total');

    const revision = await applyDocument(org.id, 0);
    const [gp, gw, p, w] = await Promise.all([gzipPatches, gzipWhole, patches, whole].map(nextObjectEvent));
    if (!gp || !gw || !p || !w) throw new Error('four events');
    expect(p.type).toBe('patch');
    expect(w.type).toBe('change');
    expect(gp).toMatchObject({ kind: 'organization', type: 'gzip', value: { revision } });
    expect(gw).toMatchObject({ kind: 'organization', type: 'gzip', value: { revision } });
    expect(unpacked(gp)).toEqual(p);
    expect(unpacked(gw)).toEqual(w);
    // Packing is worth its cost here: far fewer bytes on the wire.
    expect(JSON.stringify(gw).length * 4).toBeLessThan(JSON.stringify(w).length);
    expect(await ws.metric('fleetplane_watch_gzip_written_total')).toBe(gzipBefore + 2);
    expect(await ws.metric('fleetplane_watch_patches_written_total')).toBe(patchesBefore + 2);

    // A small change of the same object: its patch is plain; the whole object, policy and all, is still packed.
    const small = await ws.h.ok<Organization>(200, 'PATCH', paths.organization(org.id), { body: { description: 'small' } });
    const after = await Promise.all([gzipPatches, gzipWhole, patches, whole].map(nextObjectEvent));
    expect(after.map((e) => e.type)).toEqual(['patch', 'gzip', 'patch', 'change']);
    expect(after.map((e) => (e.type === 'error' ? 0 : e.value.revision))).toEqual([small.revision, small.revision, small.revision, small.revision]);
    expect(after[0]).toEqual(after[2]);
    expect(unpacked(after[1] ?? after[3] ?? w)).toEqual(after[3]);
    expect(await ws.metric('fleetplane_watch_gzip_written_total')).toBe(gzipBefore + 3);
    for (const s of [gzipPatches, gzipWhole, patches, whole]) s.destroy();
  });

  it('reach SDK consumers as the event they stand for', async () => {
    const org = await ws.h.createOrg();
    const client = new FleetplaneClient({ baseUrl: ws.url, token: ws.h.admin });
    const stop = new AbortController();
    const events = client.watchEvents(org.id, [{ kind: 'organization', patches: true, gzip: true }], { signal: stop.signal });
    const seen: StreamEvent[] = [];
    const reading = (async () => {
      for await (const e of events) {
        seen.push(e);
        if (e.type === 'patch') return e;
      }
      return undefined;
    })();
    await expect.poll(() => seen.some((e) => e.type === 'tail')).toBe(true);
    const plain = (await opened(org.id, [{ kind: 'organization', patches: true }]))[0];
    const revision = await applyDocument(org.id, 1);
    const got = await reading;
    stop.abort();
    expect(got?.value.revision).toBe(revision);
    expect(got).toEqual(plain ? await nextObjectEvent(plain) : undefined);
    plain?.destroy();
  });
});
