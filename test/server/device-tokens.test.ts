/**
 * Device tokens over time (docs/protocol.md "Device tokens over time"):
 * expiry at enrollment, 401 once expired on every entry point (REST, watch,
 * tunnel), renewal by the device itself with an overlap, and the expiry
 * listing for admins.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { FleetplaneClient, AuthError } from '../../src/client/index.js';
import { DEVICE_TOKEN_OVERLAP_SECONDS, HEADERS, TUNNEL_CLOSE_CODES, paths, type DeviceTokenExpiry, type DeviceTokenRenewal, type EnrolledDevice } from '../../src/protocol/index.js';
import { tunnelUrl } from '../../src/agent/tunnel/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { MAX_VALID_DEVICE_TOKENS } from '../../src/server/store/device-tokens.js';
import { Harness, backends, errorCode, useServer, wgKey } from './fixtures.js';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';

const TTL = 3_600;

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function tokenExpiry(h: Harness, deviceId: string): Promise<{ id: string; expires_at: Date | null }[]> {
  const rows = await h.server.db.query<{ id: string; expires_at: unknown }>(
    `SELECT id, expires_at FROM tokens WHERE device_id = $1 ORDER BY created_at`,
    [deviceId],
  );
  return rows.map((r) => ({ id: r.id, expires_at: r.expires_at === null ? null : new Date(r.expires_at as string) }));
}

describe.each(backends().filter((b) => b.available))('device tokens with --device-token-ttl on $name', ({ name }) => {
  const h = useServer(name, { deviceTokenTtl: TTL });
  let org: string;
  let device: EnrolledDevice;
  let other: EnrolledDevice;

  beforeAll(async () => {
    org = (await h().createOrg()).id;
    const key = await h().createRegKey(org);
    device = await h().createDevice(org, {}, key.key);
    other = await h().createDevice(org, {}, key.key);
  });

  it('gives an enrolled device a token expiring after the TTL, and keeps the expiry out of the device', async () => {
    expect(device.device_token_expires_at).not.toBeNull();
    const left = Date.parse(device.device_token_expires_at ?? '') - Date.now();
    expect(left).toBeGreaterThan((TTL - 60) * 1000);
    expect(left).toBeLessThanOrEqual(TTL * 1000 + 1000);
    expect(Object.keys(device)).not.toContain('expires_at');
  });

  it('renews the device\'s own token: a new one that works, the old one cut to the overlap, no revision', async () => {
    const before = await h().head(org);
    const res = await h().call('POST', paths.deviceToken(org, device.id), { token: device.device_token });
    expect(res.statusCode, res.body).toBe(201);
    const renewed = res.json<DeviceTokenRenewal>();
    expect(renewed.device_token).not.toBe(device.device_token);
    expect(Date.parse(renewed.expires_at ?? '')).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
    // Both work during the overlap.
    for (const token of [renewed.device_token, device.device_token]) {
      expect((await h().call('GET', paths.device(org, device.id), { token })).statusCode).toBe(200);
    }
    const tokens = await tokenExpiry(h(), device.id);
    expect(tokens).toHaveLength(2);
    const old = tokens[0]?.expires_at?.getTime() ?? Infinity;
    expect(old).toBeLessThanOrEqual(Date.now() + DEVICE_TOKEN_OVERLAP_SECONDS * 1000 + 1000);
    // No write to the device: watchers see nothing.
    expect(await h().head(org)).toBe(before);
    device = { ...device, device_token: renewed.device_token };
  });

  it('refuses renewing another device\'s token, and every other credential', async () => {
    const res = await h().call('POST', paths.deviceToken(org, other.id), { token: device.device_token });
    expect(res.statusCode).toBe(403);
    const orgAdmin = await h().createToken(org, 'admin');
    for (const token of [h().admin, orgAdmin, await h().createToken(org, 'read'), (await h().createRegKey(org)).key]) {
      const r = await h().call('POST', paths.deviceToken(org, device.id), { token });
      expect(r.statusCode, r.body).toBe(403);
      expect(errorCode(r)).toBe('forbidden');
    }
    expect((await h().call('POST', paths.deviceToken(org, device.id))).statusCode).toBe(401);
  });

  it('bounds the valid tokens a device may hold (429 with Retry-After)', async () => {
    const key = await h().createRegKey(org);
    const looping = await h().createDevice(org, {}, key.key);
    let token = looping.device_token;
    for (let i = 1; i < MAX_VALID_DEVICE_TOKENS; i++) {
      const r = await h().call('POST', paths.deviceToken(org, looping.id), { token });
      expect(r.statusCode, r.body).toBe(201);
      token = r.json<DeviceTokenRenewal>().device_token;
    }
    const refused = await h().call('POST', paths.deviceToken(org, looping.id), { token });
    expect(refused.statusCode).toBe(429);
    expect(errorCode(refused)).toBe('too_many_requests');
    expect(Number(refused.headers[HEADERS.retryAfter.toLowerCase()])).toBeGreaterThan(0);
    expect(await tokenExpiry(h(), looping.id)).toHaveLength(MAX_VALID_DEVICE_TOKENS);
  });

  it('lists each device\'s token expiry for admins, filtered by expiring_within', async () => {
    const all = await h().ok<{ items: DeviceTokenExpiry[] }>(200, 'GET', paths.deviceTokens(org));
    const mine = all.items.find((i) => i.device_id === device.id);
    expect(mine?.hostname).toBeTruthy();
    expect(Date.parse(mine?.expires_at ?? '')).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
    // The renewed token's expiry, not the old one's.
    const soon = await h().ok<{ items: DeviceTokenExpiry[] }>(200, 'GET', paths.deviceTokens(org), { query: { expiring_within: '600' } });
    expect(soon.items.map((i) => i.device_id)).not.toContain(device.id);
    const later = await h().ok<{ items: DeviceTokenExpiry[] }>(200, 'GET', paths.deviceTokens(org), { query: { expiring_within: String(TTL + 60) } });
    expect(later.items.map((i) => i.device_id)).toContain(device.id);
    const paged = await h().ok<{ items: DeviceTokenExpiry[]; next?: string }>(200, 'GET', paths.deviceTokens(org), { query: { limit: '1' } });
    expect(paged.items).toHaveLength(1);
    expect(paged.next).toBe(paged.items[0]?.device_id);
    const read = await h().createToken(org, 'read');
    expect((await h().call('GET', paths.deviceTokens(org), { token: read })).statusCode).toBe(403);
    expect((await h().call('GET', paths.deviceTokens(org), { token: device.device_token })).statusCode).toBe(403);
  });
});

describe.each(backends().filter((b) => b.available))('device tokens without a TTL on $name', ({ name }) => {
  const h = useServer(name);

  it('never expire, and renewing only rotates: the new one never expires, the old one ends after the overlap', async () => {
    const org = (await h().createOrg()).id;
    const device = await h().createDevice(org, {}, (await h().createRegKey(org)).key);
    expect(device.device_token_expires_at).toBeNull();
    const res = await h().call('POST', paths.deviceToken(org, device.id), { token: device.device_token });
    expect(res.statusCode).toBe(201);
    expect(res.json<DeviceTokenRenewal>().expires_at).toBeNull();
    const [old, fresh] = await tokenExpiry(h(), device.id);
    expect(old?.expires_at).not.toBeNull();
    expect(fresh?.expires_at).toBeNull();
    const listed = await h().ok<{ items: DeviceTokenExpiry[] }>(200, 'GET', paths.deviceTokens(org));
    expect(listed.items.find((i) => i.device_id === device.id)?.expires_at).toBeNull();
  });

  it('refuses the old token once its overlap ended, and the new one goes on', async () => {
    const org = (await h().createOrg()).id;
    const device = await h().createDevice(org, {}, (await h().createRegKey(org)).key);
    // Straight through the store, so the test sets the overlap: audited as the server's own write.
    const renewed = await runAudited(SYSTEM_SCOPE, () => h().server.ctx.store.devices.renewToken(org, device.id, 0, 0.5));
    await until('the old token to be refused', async () => (await h().call('GET', paths.device(org, device.id), { token: device.device_token })).statusCode === 401);
    expect((await h().call('GET', paths.device(org, device.id), { token: renewed.device_token })).statusCode).toBe(200);
  });

  it('expiring a device\'s key revokes every token it holds, keeps the device, and only admins may', async () => {
    const org = (await h().createOrg()).id;
    const device = await h().createDevice(org, {}, (await h().createRegKey(org)).key);
    const renewed = (await h().call('POST', paths.deviceToken(org, device.id), { token: device.device_token })).json<DeviceTokenRenewal>();
    const reader = await h().createToken(org, 'read');
    expect((await h().call('DELETE', paths.deviceToken(org, device.id), { token: reader })).statusCode).toBe(403);
    expect((await h().call('DELETE', paths.deviceToken(org, device.id), { token: renewed.device_token })).statusCode).toBe(403);
    expect((await h().call('GET', paths.device(org, device.id), { token: renewed.device_token })).statusCode).toBe(200);
    await h().ok(204, 'DELETE', paths.deviceToken(org, device.id));
    for (const token of [device.device_token, renewed.device_token]) {
      expect((await h().call('GET', paths.devices(org), { token })).statusCode).toBe(401);
    }
    // The device stays; expiring again finds nothing to revoke and still answers 204.
    expect((await h().ok<{ id: string }>(200, 'GET', paths.device(org, device.id))).id).toBe(device.id);
    await h().ok(204, 'DELETE', paths.deviceToken(org, device.id));
    const audit = await h().ok<{ items: { action: string; kind: string; object_id: string; details: Record<string, unknown> }[] }>(200, 'GET', `${paths.orgAudit(org)}?kind=device_token&action=revoke`);
    expect(audit.items.map((e) => e.details['tokens'])).toEqual([0, 2]);
    await h().ok(404, 'DELETE', paths.deviceToken(org, '00000000-0000-4000-8000-000000000000'));
  });

  it('deleting a device revokes its renewed tokens too', async () => {
    const org = (await h().createOrg()).id;
    const device = await h().createDevice(org, {}, (await h().createRegKey(org)).key);
    const renewed = (await h().call('POST', paths.deviceToken(org, device.id), { token: device.device_token })).json<DeviceTokenRenewal>();
    await h().ok(204, 'DELETE', paths.device(org, device.id));
    for (const token of [device.device_token, renewed.device_token]) {
      expect((await h().call('GET', paths.devices(org), { token })).statusCode).toBe(401);
    }
    expect((await h().call('POST', paths.deviceToken(org, device.id), { token: renewed.device_token })).statusCode).toBe(401);
  });
});

describe('an expired device token, on every entry point', () => {
  let server: FleetServer;
  let base: string;
  const ADMIN = 'fpa_device_token_expiry';

  beforeAll(async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, adminToken: ADMIN, deviceTokenTtl: 2, revocationCheckInterval: 0.2 });
    base = server.url ?? '';
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is 401 on REST, ends its watch stream (forbidden) and its tunnel (4003), and is refused when reconnecting', async () => {
    const admin = new FleetplaneClient({ baseUrl: base, token: ADMIN });
    const org = (await admin.organizations.create({ name: 'expiry' })).id;
    const key = await admin.registrationKeys.create(org, {});
    const device = await admin.devices.enroll(org, key.key, { hostname: 'short-lived', public_key: wgKey() });
    const expiresAt = Date.parse(device.device_token_expires_at ?? '');
    expect(expiresAt).toBeGreaterThan(Date.now());
    const client = new FleetplaneClient({ baseUrl: base, token: device.device_token });

    const ws = new WebSocket(tunnelUrl(base), { headers: { [HEADERS.authorization]: `Bearer ${device.device_token}` } });
    const tunnelClosed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.on('message', (data: WebSocket.RawData) => {
      if (String(data).includes('"ping"')) ws.send(JSON.stringify({ type: 'pong' }));
    });

    let streamError: unknown;
    const stream = (async () => {
      try {
        for await (const _ of client.watchEvents(org, [{ kind: 'device' }])) {
          // Reads until the server ends the stream.
        }
      } catch (err) {
        streamError = err;
      }
    })();

    expect((await client.devices.get(org, device.id)).id).toBe(device.id);
    expect(await tunnelClosed).toBe(TUNNEL_CLOSE_CODES.revoked);
    await stream;
    // Neither ended before the token's expiry.
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
    expect(streamError).toBeInstanceOf(AuthError);
    expect((streamError as AuthError).code).toBe('forbidden');
    await expect(client.devices.get(org, device.id)).rejects.toMatchObject({ code: 'unauthorized' });
    const again = new WebSocket(tunnelUrl(base), { headers: { [HEADERS.authorization]: `Bearer ${device.device_token}` } });
    again.on('error', () => undefined);
    const status = await new Promise<number>((resolve) => {
      again.once('unexpected-response', (req, res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      again.once('open', () => {
        resolve(101);
        again.close();
      });
    });
    expect(status).toBe(401);
  });
});
