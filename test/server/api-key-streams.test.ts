/**
 * A personal API key's watch stream ends when the key is revoked, here or on
 * another replica (the one revocation follower), and when its user leaves
 * the organization the next request is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_SELF, WATCH_KINDS, paths, type CreatedApiKey } from '../../src/protocol/index.js';
import { openWatch, watchRequest } from '../watch/support/watch-client.js';
import { startWatchServer, type WatchServer } from '../watch/support/watch-server.js';
import { addMemberForTest, createUserForTest } from './support/users.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

describe('API key streams (PGlite)', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
  });
  afterAll(async () => {
    await ws.close();
  });

  it('revoking a key through the API ends its open stream; one revoked elsewhere once the follower saw it', async () => {
    const org = (await ws.h.createOrg()).id;
    const user = await createUserForTest(ws.server.db);
    await addMemberForTest(ws.server.db, org, user.id, 'read');
    const mint = () => ws.h.ok<CreatedApiKey>(201, 'POST', paths.userApiKeys(USER_SELF), { token: user.session, body: { organizations: [org], role: 'read' } });

    const here = await mint();
    const stream = await openWatch(ws.target(org, here.key), ALL);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    await ws.h.ok(204, 'DELETE', paths.userApiKey(USER_SELF, here.id), { token: user.session });
    expect((await watchRequest(ws.target(org, here.key), ALL)).status).toBe(401);
    await ws.server.revocations.check();
    await stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden');
    stream.destroy();

    const elsewhere = await mint();
    const other = await openWatch(ws.target(org, elsewhere.key), ALL);
    await other.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    await ws.server.db.query('UPDATE tokens SET revoked_at = now() WHERE id = $1', [elsewhere.id]);
    await ws.server.revocations.check();
    await other.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden');
    expect((await watchRequest(ws.target(org, elsewhere.key), ALL)).status).toBe(401);
    other.destroy();
  });

  it("a session's stream ends when the session is revoked", async () => {
    const org = (await ws.h.createOrg()).id;
    const user = await createUserForTest(ws.server.db);
    await addMemberForTest(ws.server.db, org, user.id, 'admin');
    const stream = await openWatch(ws.target(org, user.session), ALL);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    await ws.server.db.query(`UPDATE tokens SET revoked_at = now() WHERE user_id = $1 AND kind = 'session'`, [user.id]);
    await ws.server.revocations.check();
    await stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden');
    stream.destroy();
  });
});
