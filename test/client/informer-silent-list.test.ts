import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetplaneClient, SharedInformers } from '../../src/client/index.js';
import { HEADERS, MEDIA } from '../../src/protocol/index.js';
import { FAST } from './support/informer-harness.js';

/**
 * The fleet bench's simulated agents had no liveness check and waited
 * forever on a watch connection that died silently while they were listing
 * (no FIN or reset ever arrives when the kernel gives up a server-closed
 * connection under TCP memory pressure). The SDK's informers must not: the
 * idle timeout (3 bookmark intervals) covers the initial list, not only a
 * stream at its tails.
 */

const line = (o: unknown): string => `${JSON.stringify(o)}\n`;

let server: Server | undefined;
const held = new Set<ServerResponse>();
let shared: SharedInformers | undefined;

afterEach(async () => {
  await shared?.stop();
  shared = undefined;
  for (const res of held) res.destroy();
  held.clear();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

describe('SharedInformers on a stream that falls silent mid-list', () => {
  it('gives the stream up after the idle timeout and syncs on the next one', async () => {
    const bodies: unknown[] = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (b: Buffer) => (body += b.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(body));
        held.add(res);
        res.writeHead(200, { [HEADERS.contentType]: MEDIA.watch });
        if (bodies.length === 1) {
          // Part of the list, then nothing: the connection is dead, but nothing says so.
          res.write(line({ kind: 'device', type: 'change', value: { id: 'a', revision: 5 } }));
          return;
        }
        res.write(line({ kind: 'device', type: 'change', value: { id: 'b', revision: 6 } }));
        res.write(line({ kind: 'device', type: 'tail', value: { revision: 6 } }));
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new FleetplaneClient({ baseUrl: url, token: 't' });
    shared = new SharedInformers(client, 'org', { ...FAST, bookmarkIntervalMs: 100 });
    const errors: string[] = [];
    shared.onError((e) => errors.push(`${e.name}:${(e as { code?: string }).code}`));
    const devices = shared.informer('device');
    shared.start();
    await devices.waitForSync(AbortSignal.timeout(5_000));
    expect(errors[0]).toBe('TransportError:stream_idle');
    expect(devices.list().map((d) => d.id).sort()).toEqual(['a', 'b']);
    // The second stream resumed from what the first one delivered.
    expect(bodies[1]).toEqual([{ kind: 'device', gt_revision: 5, at_tail: false, patches: true, gzip: true }]);
  });
});
