/**
 * Every stream opened with a credential ends with `forbidden` when the
 * credential is revoked, whatever its kind: the SDK's watch and convergence
 * streams against the real server (docs/protocol.md "Long-lived streams").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthError, FleetplaneClient, type Convergence, type StreamEvent } from '../../src/client/index.js';
import { startRealServer, uniqueName, type RealServer } from './support/real-server.js';

let rs: RealServer;
beforeAll(async () => {
  rs = await startRealServer({ revocationCheckInterval: 0.1 });
});
afterAll(async () => {
  await rs?.close();
});

/** Reads an iterator to its end; resolves with what it threw (undefined when it ended quietly). */
async function failure<T>(it: AsyncIterable<T>, seen: T[]): Promise<unknown> {
  try {
    for await (const v of it) seen.push(v);
    return undefined;
  } catch (err) {
    return err;
  }
}

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a revoked organization token', () => {
  it('ends its watch stream and its convergence stream with forbidden; a follow stops for good', async () => {
    const org = await rs.admin.organizations.create({ name: uniqueName('revoked') });
    const created = await rs.admin.tokens.create(org.id, { role: 'read' });
    const reader = new FleetplaneClient({ baseUrl: rs.url, token: created.token });

    const events: StreamEvent[] = [];
    const watch = failure(reader.watchEvents(org.id, [{ kind: 'device' }]), events);
    const values: Convergence[] = [];
    const convergence = failure(reader.organizations.watchConvergence(org.id), values);
    const followed: Convergence[] = [];
    const stop = new AbortController();
    const follow = failure(reader.organizations.followConvergence(org.id, { signal: stop.signal, backoff: { initialMs: 1, maxMs: 20 } }), followed);
    await until('every stream is open', () => events.some((e) => e.type === 'tail') && values.length > 0 && followed.length > 0);
    expect(rs.server.streams.count('convergence')).toBe(2);

    await rs.admin.tokens.delete(org.id, created.id);

    const [w, c, f] = await Promise.all([watch, convergence, follow]);
    expect(w).toBeInstanceOf(AuthError);
    expect(w).toMatchObject({ code: 'forbidden' });
    expect(c).toBeInstanceOf(AuthError);
    expect(c).toMatchObject({ code: 'forbidden' });
    expect(f).toBeInstanceOf(AuthError);
    stop.abort();
    await until('the server let go of them', () => rs.server.streams.count('convergence') === 0 && rs.server.streams.count('watch') === 0);
  });

  it('an expired token ends its convergence stream too', async () => {
    const org = await rs.admin.organizations.create({ name: uniqueName('expiring') });
    const created = await rs.admin.tokens.create(org.id, { role: 'read', expires_at: new Date(Date.now() + 60_000).toISOString() });
    const reader = new FleetplaneClient({ baseUrl: rs.url, token: created.token });
    const values: Convergence[] = [];
    const convergence = failure(reader.organizations.watchConvergence(org.id), values);
    await until('the stream is open', () => values.length > 0);
    // Expiry as the database's clock sees it: the follower acts on it as on a revocation.
    await rs.server.db.query('UPDATE tokens SET expires_at = now() WHERE id = $1', [created.id]);
    expect(await convergence).toMatchObject({ code: 'forbidden' });
  });
});
