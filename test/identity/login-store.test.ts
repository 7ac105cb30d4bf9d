/**
 * The storage of logins on both backends (PGlite and real PostgreSQL):
 * users by (issuer, subject) with the first-login admin flag, device-login
 * polls claimed once per interval across replicas, pending logins used once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';
import type { FleetServer } from '../../src/server/index.js';
import type { DeviceLoginData, LoginIdentity } from '../../src/server/store/index.js';
import { backends, startTestServer, uniqueName } from '../server/fixtures.js';

const TERMS = { ttlSeconds: 60, maxAgeSeconds: 120, source: '192.0.2.1', userAgent: undefined, description: 'ctl' };
const device: DeviceLoginData = {
  deviceCode: 'secret-device-code',
  userCode: 'ABCD-EFGH',
  verificationUri: 'https://issuer.test/device',
  verificationUriComplete: undefined,
  expiresAt: Date.now() + 600_000,
  intervalS: 5,
  client: 'ctl',
};

describe.each(backends())('login storage on $name', ({ name, available }) => {
  let a: FleetServer;
  beforeAll(async () => {
    if (!available) return;
    a = await startTestServer(name);
  });
  afterAll(async () => {
    await a?.close();
  });

  it.skipIf(!available)('one user per (issuer, subject); server_admin decided at the first login only', async () => {
    const subject = `s-${uniqueName()}`;
    const who = (email: string): LoginIdentity => ({ issuer: 'https://issuer.test', subject, email, emailVerified: true, name: 'N' });
    const first = await runAudited(SYSTEM_SCOPE, () => a.ctx.store.logins.signIn(who('x@example.com'), { emails: ['x@example.com'], subjects: [] }, TERMS));
    const second = await runAudited(SYSTEM_SCOPE, () => a.ctx.store.logins.signIn(who('y@example.com'), { emails: [], subjects: [] }, TERMS));
    expect(second.user).toMatchObject({ id: first.user.id, email: 'y@example.com', server_admin: true });
    const rows = await a.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE subject = $1', [subject]);
    expect(Number(rows[0]?.n)).toBe(1);
    const audit = await a.db.query<{ kind: string }>(`SELECT kind FROM audit_log WHERE actor_id = $1 AND action = 'create' ORDER BY kind`, [first.user.id]);
    expect(audit.map((r) => r.kind)).toEqual(['session', 'session', 'user']);
  });

  it.skipIf(!available)('a device login is polled at most once per interval, whichever replica asks; a poll too soon grows the interval', async () => {
    const logins = a.ctx.store.logins;
    const handle = await logins.createPendingLogin('device', '192.0.2.9', device, 600);
    const [x, y] = await Promise.all([logins.claimDevicePoll(handle), logins.claimDevicePoll(handle)]);
    expect([x.status, y.status].sort()).toEqual(['poll', 'too_soon']);
    const stored = await a.db.query<{ interval: number }>(`SELECT (data->>'intervalS')::int AS interval FROM pending_logins WHERE kind = 'device' AND source = '192.0.2.9'`);
    expect(stored[0]?.interval).toBe(10);
    // The device code is kept server-side only, under the hash of the handle.
    expect(JSON.stringify(await a.db.query('SELECT id_hash FROM pending_logins'))).not.toContain(handle);
    await logins.deletePendingLogin(handle);
    expect((await logins.claimDevicePoll(handle)).status).toBe('unknown');
  });

  it.skipIf(!available)('a pending browser login is taken once', async () => {
    const logins = a.ctx.store.logins;
    const data = { state: 's', nonce: 'n', codeVerifier: 'v', redirectUri: 'http://x/cb', returnTo: '/', createdAt: Date.now() };
    const handle = await logins.createPendingLogin('browser', '192.0.2.10', data, 600);
    const [one, two] = await Promise.all([logins.takeBrowserLogin(handle), logins.takeBrowserLogin(handle)]);
    expect([one, two].filter((t) => t !== undefined)).toEqual([data]);
  });
});
