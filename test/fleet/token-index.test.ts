import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS, paths, type CreatedOrgToken } from '../../src/protocol/index.js';
import { afterCommit, hashSecret, TokenIndex } from '../../src/server/store/index.js';
import { backends } from '../server/fixtures.js';
import { openWatch, watchRequest } from '../watch/support/watch-client.js';
import { startWatchServer, type WatchServer } from '../watch/support/watch-server.js';

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

/**
 * Counts the token lookups by secret made during `call`: only those, as a
 * server-wide count also caught the background rounds (token follower,
 * presence) now and then.
 */
function lookupCounter(database: object): (call: () => Promise<unknown>) => Promise<number> {
  const db = database as { query: (text: string, params?: readonly unknown[]) => Promise<unknown[]> };
  return async (call) => {
    const query = db.query;
    let n = 0;
    db.query = (text, params) => {
      if (/\bFROM tokens\b/i.test(text) && /\bsecret_hash = \$1/.test(text)) n++;
      return query.call(db, text, params);
    };
    try {
      await call();
    } finally {
      db.query = query;
    }
    return n;
  };
}

describe.each(backends())('device and organization tokens from memory on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      // Queries are counted server-wide: no lease renewal or bus hello may land inside a counted window.
      ws = await startWatchServer(name, { replicaLeaseTtl: 3600, busHelloInterval: 3600 });
    });
    afterAll(async () => {
      await ws.close();
    });

    it('agents joining with their device tokens cost no authentication query', async () => {
      const org = (await ws.h.createOrg()).id;
      const devices = [];
      for (let i = 0; i < 10; i++) devices.push(await ws.h.createDevice(org));
      const first = await openWatch(ws.target(org), ALL);
      await first.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
      // Every statement the server sends from here on (the presence batch and its bus signal are expected).
      const db = ws.server.db as { query: (text: string, params?: readonly unknown[]) => Promise<unknown[]> };
      const query = db.query;
      const sent: string[] = [];
      db.query = (text, params) => {
        sent.push(text);
        return query.call(db, text, params);
      };
      try {
        const streams = await Promise.all(devices.map((d) => openWatch(ws.target(org, d.device_token), ALL)));
        for (const s of streams) await s.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
        for (const s of streams) s.destroy();
      } finally {
        db.query = query;
      }
      expect(sent.filter((t) => /\bFROM tokens\b/i.test(t))).toEqual([]);
      expect(sent.filter((t) => /\bFROM objects\b/i.test(t) && !/device_presence|device_status/.test(t))).toEqual([]);
      first.destroy();
    });

    it('a token revoked here is refused at once; one revoked elsewhere once the follower saw it, and its streams end', async () => {
      const org = (await ws.h.createOrg()).id;
      const [a, b] = [await ws.h.createDevice(org), await ws.h.createDevice(org)];
      const token = await ws.h.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'read' } });
      // Here: the API revokes and the index forgets in the same call.
      expect((await watchRequest(ws.target(org, token.token), ALL)).status).toBe(200);
      await ws.h.ok(204, 'DELETE', paths.token(org, token.id));
      expect((await watchRequest(ws.target(org, token.token), ALL)).status).toBe(401);
      await ws.h.ok(204, 'DELETE', paths.device(org, a.id));
      expect((await watchRequest(ws.target(org, a.device_token), ALL)).status).toBe(401);

      // Elsewhere (another replica wrote it): refused once the follower's round has seen it.
      const stream = await openWatch(ws.target(org, b.device_token), ALL);
      await stream.waitFor((e) => e.type === 'tail' && e.kind === 'organization');
      await ws.server.db.query('UPDATE tokens SET revoked_at = now() WHERE device_id = $1', [b.id]);
      await ws.server.revocations.check();
      expect((await watchRequest(ws.target(org, b.device_token), ALL)).status).toBe(401);
      await stream.waitFor((e) => e.type === 'error' && e.value.code === 'forbidden');
      stream.destroy();
    });

    it('tokens valid at start are known without a query; a forgotten one is looked up once', async () => {
      const org = (await ws.h.createOrg()).id;
      const d = await ws.h.createDevice(org);
      const ids = (await ws.server.db.query<{ id: string }>('SELECT id FROM tokens WHERE device_id = $1', [d.id])).map((r) => r.id);
      const store = ws.server.ctx.store;
      const get = (): Promise<unknown> => ws.h.ok(200, 'GET', paths.device(org, d.id), { token: d.device_token });
      const lookupsOf = lookupCounter(ws.server.db);
      expect(await lookupsOf(get)).toBe(0);
      store.tokens.revoke(ids);
      expect(await lookupsOf(get)).toBe(1);
      expect(await lookupsOf(get)).toBe(0);
      // As after a restart: loaded at start, no lookup.
      store.tokens.revoke(ids);
      await store.credentials.loadTokens();
      expect(await lookupsOf(get)).toBe(0);
    });

    it('a token created on another replica is known after the follower\'s round, without a lookup', async () => {
      const org = (await ws.h.createOrg()).id;
      const store = ws.server.ctx.store;
      const lookups = lookupCounter(ws.server.db);
      // Created elsewhere: this replica's index has never seen them.
      const [a, b] = [await ws.h.createDevice(org), await ws.h.createDevice(org)];
      const ids = (await ws.server.db.query<{ id: string }>('SELECT id FROM tokens WHERE device_id = ANY($1::uuid[])', [[a.id, b.id]])).map((r) => r.id);
      store.tokens.revoke(ids);
      await ws.server.revocations.check();
      expect(await lookups(() => ws.h.ok(200, 'GET', paths.device(org, a.id), { token: a.device_token }))).toBe(0);
      // Revoked elsewhere meanwhile: the same round's query says so, and it is not entered.
      store.tokens.revoke(ids);
      await ws.server.db.query('UPDATE tokens SET revoked_at = now() WHERE device_id = $1', [b.id]);
      await ws.server.revocations.check();
      expect(store.tokens.get(hashSecret(b.device_token))).toBeUndefined();
      expect(await lookups(() => ws.h.ok(401, 'GET', paths.device(org, b.id), { token: b.device_token }))).toBe(1);
    });
  });
});

describe('TokenIndex', () => {
  const principal = (tokenId: string, deviceId = 'd') => ({ type: 'device', tokenId, orgId: 'o', deviceId }) as const;

  it('never returns an expired token, forgets revoked ones and a device\'s, and keeps at most its limit', () => {
    const index = new TokenIndex(2);
    index.add('h1', { principal: principal('t1', 'd1'), expiresAt: 1_000 });
    expect(index.get('h1', 999)).toMatchObject({ tokenId: 't1' });
    expect(index.get('h1', 1_000)).toBeUndefined();
    index.add('h1', { principal: principal('t1', 'd1'), expiresAt: null });
    index.add('h2', { principal: principal('t2', 'd2'), expiresAt: null });
    index.add('h3', { principal: principal('t3', 'd3'), expiresAt: null });
    expect(index.size).toBe(2);
    expect(index.get('h3')).toBeUndefined();
    index.revoke(['t1']);
    expect(index.get('h1')).toBeUndefined();
    index.revokeDevice('d2');
    expect(index.get('h2')).toBeUndefined();
    expect(index.size).toBe(0);
  });

  it('changes only after the write committed: a failed write leaves it as it was; revocations go before additions', async () => {
    const index = new TokenIndex(10);
    index.add('h1', { principal: principal('t1'), expiresAt: null });
    const failed = afterCommit(index, Promise.reject(new Error('rolled back')), () => ({ revoked: ['t1'], added: [{ hash: 'h2', token: { principal: principal('t2'), expiresAt: null } }] }));
    await expect(failed).rejects.toThrow('rolled back');
    expect(index.get('h1')).toMatchObject({ tokenId: 't1' });
    expect(index.get('h2')).toBeUndefined();

    let settle = (): void => {};
    const write = new Promise<string>((resolve) => (settle = () => resolve('t3')));
    const done = afterCommit(index, write, (id) => ({ revoked: ['t1', id], added: [{ hash: 'h3', token: { principal: principal(id), expiresAt: null } }] }));
    await Promise.resolve();
    expect(index.get('h3')).toBeUndefined();
    settle();
    expect(await done).toBe('t3');
    expect(index.get('h1')).toBeUndefined();
    expect(index.get('h3')).toMatchObject({ tokenId: 't3' });
  });
});
