import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paths } from '../../src/protocol/index.js';
import { openWatch, watchRequest } from './support/watch-client.js';
import { startWatchServer, type WatchServer } from './support/watch-server.js';

describe('deleting an organization', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
  });
  afterAll(async () => {
    await ws.close();
  });

  it('ends its open streams after the organization delete event, and new watches get 404', async () => {
    const org = await ws.h.createOrg();
    const stream = await openWatch(ws.target(org.id), [{ kind: 'organization' }, { kind: 'device' }]);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'device');

    await ws.h.ok(204, 'DELETE', paths.organization(org.id));

    const deleted = await stream.waitFor((e) => e.type === 'delete' && e.kind === 'organization');
    expect(deleted.type === 'delete' && deleted.value.id).toBe(org.id);
    const end = await stream.ended;
    expect(end.complete).toBe(true);

    const again = await watchRequest(ws.target(org.id), [{ kind: 'device' }]);
    expect(again.status).toBe(404);
    expect(again.code).toBe('not_found');
  });
});
