/**
 * Issue 37, "One live stream per page": `POST .../page` carries the watch
 * events of its watches, the organization's convergence, and its devices'
 * statuses as a reset then deltas (docs/protocol.md "Page stream").
 */
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HEADERS,
  MEDIA,
  bearerAuthorization,
  paths,
  type PageLine,
  type StatusesItems,
  type StatusesValue,
} from '../../src/protocol/index.js';
import { backends } from '../server/fixtures.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { LineSplitter } from './support/ndjson.js';
import { statusReport } from '../fleet/support/status-tunnel.js';

const report = statusReport;

function unpack(v: StatusesValue): StatusesItems {
  if ('gzip' in v) return JSON.parse(gunzipSync(Buffer.from(v.gzip, 'base64')).toString('utf8')) as StatusesItems;
  return { items: v.items, removed: v.removed };
}

/** A page stream read line by line into `lines`, until `stop`. */
class PageReader {
  readonly lines: PageLine[] = [];
  readonly #ac = new AbortController();
  status = 0;
  done: Promise<void> = Promise.resolve();

  static async open(url: string, org: string, token: string, body: unknown): Promise<PageReader> {
    const r = new PageReader();
    const res = await fetch(`${url}${paths.page(org)}`, {
      method: 'POST',
      headers: { [HEADERS.authorization]: bearerAuthorization(token), [HEADERS.contentType]: MEDIA.json },
      body: JSON.stringify(body),
      signal: r.#ac.signal,
    });
    r.status = res.status;
    if (res.status !== 200) return r;
    expect(res.headers.get(HEADERS.contentType)).toBe(MEDIA.watch);
    const reader = res.body!.getReader();
    const split = new LineSplitter();
    r.done = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          for (const line of split.push(Buffer.from(value))) if (line !== '') r.lines.push(JSON.parse(line) as PageLine);
        }
      } catch (err) {
        if (!r.#ac.signal.aborted) throw err;
      }
    })();
    return r;
  }

  of<T extends PageLine['type']>(type: T): Extract<PageLine, { type: T }>[] {
    return this.lines.filter((l): l is Extract<PageLine, { type: T }> => l.type === type);
  }

  /** Every device's last summary, by applying the statuses lines in order. */
  statuses(): Map<string, StatusesItems['items'][number]> {
    const held = new Map<string, StatusesItems['items'][number]>();
    for (const l of this.of('statuses')) {
      if (l.value.reset) held.clear();
      const { items, removed } = unpack(l.value);
      for (const s of items) held.set(s.id, s);
      for (const id of removed) held.delete(id);
    }
    return held;
  }

  async stop(): Promise<void> {
    this.#ac.abort();
    await this.done;
  }
}

describe.each(backends())('the page stream on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      ws = await startWatchServer(name, { statusFlushInterval: 0.05, staleAfter: 90 });
    });
    afterAll(async () => {
      await ws.close();
    });

    const fleet = (n: number) => ws.h.createOrgWithDevices(n, (i) => `page-${i}`);

    const ALL = { watches: [{ kind: 'device' }, { kind: 'security-group' }, { kind: 'organization' }], convergence: true, statuses: true };

    it('carries the list, the convergence, every status, then changes of each as they come', async () => {
      const { org, devices } = await fleet(3);
      const head = await ws.h.head(org);
      await ws.h.ok(200, 'PUT', paths.deviceStatus(org, devices[0]!.id), { token: devices[0]!.device_token, body: report(head) });
      const page = await PageReader.open(ws.url, org, await ws.h.createToken(org, 'read'), ALL);
      expect(page.status).toBe(200);
      try {
        await eventually(() => page.of('tail').length === 3 && page.of('convergence').length > 0 && page.of('statuses').length > 0, 'list, convergence and statuses');
        expect(page.of('change').filter((e) => e.kind === 'device')).toHaveLength(3);
        expect(page.of('convergence')[0]!.value).toMatchObject({ devices: 3, at_head: 1 });
        const first = page.of('statuses')[0]!;
        expect(first.value.reset).toBe(true);
        const held = page.statuses();
        expect([...held.keys()].sort()).toEqual(devices.map((d) => d.id).sort());
        expect(held.get(devices[0]!.id)).toMatchObject({ applied_revision: head, apply_error: null, os: 'linux', agent_version: 'test' });
        expect(held.get(devices[1]!.id)).toMatchObject({ applied_revision: null, os: null });

        // A report: a delta naming that device, and the convergence moves.
        await ws.h.ok(200, 'PUT', paths.deviceStatus(org, devices[1]!.id), { token: devices[1]!.device_token, body: report(head, 'nft: no such table') });
        await eventually(() => page.statuses().get(devices[1]!.id)?.apply_error === 'nft: no such table', 'the delta');
        const delta = page.of('statuses').at(-1)!;
        expect(delta.value.reset).toBe(false);
        expect(unpack(delta.value).items.map((s) => s.id)).toEqual([devices[1]!.id]);
        await eventually(() => page.of('convergence').at(-1)?.value.error === 1, 'the convergence counts the error');
        // A device online all along reports again: its delta too (nothing but the report changed).
        await ws.h.ok(200, 'PUT', paths.deviceStatus(org, devices[0]!.id), { token: devices[0]!.device_token, body: report(head, 'wg: handshake failed') });
        await eventually(() => page.statuses().get(devices[0]!.id)?.apply_error === 'wg: handshake failed', 'the delta of a device that stayed online');
        expect(page.statuses().get(devices[0]!.id)?.online).toBe(true);

        // A change to an object: its event, on the same stream.
        const sg = await ws.h.createGroup(org, { name: 'web' });
        await eventually(() => page.of('change').some((e) => e.kind === 'security-group' && e.value.id === sg.id), 'the new group');

        // A delete: its event, and the device leaves the statuses.
        await ws.h.ok(204, 'DELETE', paths.device(org, devices[2]!.id));
        await eventually(() => !page.statuses().has(devices[2]!.id), 'the deleted device leaves the statuses');
        expect(page.of('delete').some((e) => e.kind === 'device' && e.value.id === devices[2]!.id)).toBe(true);
      } finally {
        await page.stop();
      }
    });

    it('packs a large statuses line, and a page without convergence or statuses is a plain watch stream', async () => {
      const { org, devices } = await fleet(40);
      const page = await PageReader.open(ws.url, org, ws.h.admin, ALL);
      const plain = await PageReader.open(ws.url, org, ws.h.admin, { watches: [{ kind: 'device' }] });
      try {
        await eventually(() => page.of('statuses').length > 0 && plain.of('tail').length === 1, 'the reset and the plain list');
        const reset = page.of('statuses')[0]!.value;
        // 40 summaries are about 7 KiB of JSON: over the packing threshold.
        expect('gzip' in reset).toBe(true);
        expect(unpack(reset).items.map((s) => s.id).sort()).toEqual(devices.map((d) => d.id).sort());
        expect(plain.lines.every((l) => l.type !== 'convergence' && l.type !== 'statuses')).toBe(true);
      } finally {
        await Promise.all([page.stop(), plain.stop()]);
      }
    });

    it('refuses what a watch refuses, before streaming', async () => {
      const { org } = await fleet(0);
      const twice = await PageReader.open(ws.url, org, ws.h.admin, { watches: [{ kind: 'device' }, { kind: 'device' }], statuses: true });
      expect(twice.status).toBe(400);
      const none = await PageReader.open(ws.url, org, ws.h.admin, { watches: [], convergence: true });
      expect(none.status).toBe(400);
      const unknown = await PageReader.open(ws.url, org, ws.h.admin, { watches: [{ kind: 'device' }], colours: true });
      expect(unknown.status).toBe(400);
      const anonymous = await fetch(`${ws.url}${paths.page(org)}`, { method: 'POST', headers: { [HEADERS.contentType]: MEDIA.json }, body: JSON.stringify(ALL) });
      expect(anonymous.status).toBe(401);
      const missing = await PageReader.open(ws.url, '00000000-0000-4000-8000-000000000000', ws.h.admin, ALL);
      expect(missing.status).toBe(404);
    });
  });
});
