/**
 * Issue 36, part 1: a credential revoked with its maker ends its streams on
 * every replica, through the same path as any revocation (the token index,
 * then the revocation follower); and one whose maker expired ends its
 * streams once the follower sees the expiry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS, paths, type CreatedOrgToken } from '../../src/protocol/index.js';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { endMadeBy } from '../../src/server/store/makers.js';
import { openWatch, watchRequest } from '../watch/support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from '../watch/support/watch-server.js';
import { pgAdminUrl } from './fixtures.js';
import { addMemberForTest, createUserForTest } from './support/users.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

/**
 * Makes `tokenId` look made long ago, and lets the follower take a round: its
 * next round then sees the token only if the token itself was revoked (not
 * as one created recently, whose makers it checks anyway).
 */
async function settled(ws: WatchServer, tokenId: string): Promise<void> {
  await ws.server.db.query(`UPDATE tokens SET created_at = now() - interval '1 hour' WHERE id = $1`, [tokenId]);
  await ws.server.revocations.check();
}

describe('streams of credentials ended with their maker (PGlite)', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite');
  });
  afterAll(async () => {
    await ws.close();
  });

  it('revoking a session ends the streams of the tokens it made, here at once and through the follower', async () => {
    const org = (await ws.h.createOrg()).id;
    const user = await createUserForTest(ws.server.db);
    await addMemberForTest(ws.server.db, org, user.id, 'admin');
    const made = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { token: user.session, body: { role: 'read' } });
    const stream = await openWatch(ws.target(org, made.token), ALL);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    await settled(ws, made.id);
    await ws.h.ok(204, 'POST', paths.authLogout(), { token: user.session });
    expect((await watchRequest(ws.target(org, made.token), ALL)).status).toBe(401);
    await ws.server.revocations.check();
    await stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden');
    stream.destroy();
  });

  it('a cascade written by another replica reaches this one through its revocation follower', async () => {
    const org = (await ws.h.createOrg()).id;
    const maker = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'admin' } });
    const made = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { token: maker.token, body: { role: 'read' } });
    const stream = await openWatch(ws.target(org, made.token), ALL);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    await settled(ws, made.id);
    // As another replica revokes: in the database only, this replica's token index untouched.
    await ws.server.db.transaction((tx) => runAudited(SYSTEM_SCOPE, async () => {
      await tx.query('UPDATE tokens SET revoked_at = now() WHERE id = $1', [maker.id]);
      await endMadeBy(tx, [maker.id], { kind: 'token', id: maker.id });
    }));
    await ws.server.revocations.check();
    await stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden');
    expect((await watchRequest(ws.target(org, made.token), ALL)).status).toBe(401);
    stream.destroy();
  });

  it("a maker's expiry ends the streams of what it made once the follower sees it", async () => {
    const org = (await ws.h.createOrg()).id;
    const maker = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'admin', expires_at: new Date(Date.now() + 6_000).toISOString() } });
    const made = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { token: maker.token, body: { role: 'read' } });
    const stream = await openWatch(ws.target(org, made.token), ALL);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    // The follower runs by hand here (the test server's interval is an hour): once the maker expired, a round ends the stream.
    let ended = false;
    void stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden', 30_000).then(() => (ended = true), () => undefined);
    await eventually(async () => {
      await ws.server.revocations.check();
      return ended;
    }, 'the stream of what an expired maker made ends', 30_000);
    expect((await watchRequest(ws.target(org, made.token), ALL)).status).toBe(401);
    stream.destroy();
  });
});

describe.runIf(pgAdminUrl() !== '')('streams of credentials ended with their maker, across replicas (PostgreSQL)', () => {
  let a: WatchServer;
  let b: FleetServer;
  beforeAll(async () => {
    a = await startWatchServer('postgres', { revocationCheckInterval: 0.2 });
    const databaseUrl = a.settings.databaseUrl;
    if (databaseUrl === undefined) throw new Error('no database URL');
    b = await startServer({ logLevel: 'silent', host: '127.0.0.1', port: 0, databaseUrl, revocationCheckInterval: 0.2 }, { listen: true });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it("revoking a maker on one replica ends the streams of what it made on another within the revocation interval", async () => {
    const org = (await a.h.createOrg()).id;
    const maker = await a.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'admin' } });
    const made = await a.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { token: maker.token, body: { role: 'read' } });
    const onB = { url: b.url ?? '', org, token: made.token };
    const stream = await openWatch(onB, ALL);
    await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
    // Made long ago as B's follower sees it: only its own revocation can end its stream there.
    await b.db.query(`UPDATE tokens SET created_at = now() - interval '1 hour' WHERE id = $1`, [made.id]);
    await b.revocations.check();
    await a.h.ok(204, 'DELETE', paths.token(org, maker.id));
    await stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden', 20_000);
    expect((await watchRequest(onB, ALL)).status).toBe(401);
    stream.destroy();
  });
});
