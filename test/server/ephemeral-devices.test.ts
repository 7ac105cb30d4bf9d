/**
 * Ephemeral devices (docs/protocol.md "Ephemeral devices"): enrolled with an
 * ephemeral registration key, deleted through the one device delete once
 * offline past --ephemeral-offline-timeout, by one replica at a time. The
 * collector's rounds are driven directly (`runOnce`); its own timer is stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { FleetplaneClient, type StreamEvent } from '../../src/client/index.js';
import { HEADERS, paths, type Device, type EnrolledDevice } from '../../src/protocol/index.js';
import { tunnelUrl } from '../../src/agent/tunnel/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { createDatabase } from '../support/postgres-server.js';
import { Harness, backends, pgAdminUrl, wgKey } from './fixtures.js';

/** Long enough that a device created by a step is still inside it when that step's round runs (rounds are driven only by the test). */
const TIMEOUT_S = 0.3;
const ADMIN = 'fpa_ephemeral_devices';

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('ephemeral devices on one server', () => {
  let server: FleetServer;
  let h: Harness;
  let admin: FleetplaneClient;
  let org: string;

  beforeAll(async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, adminToken: ADMIN, ephemeralOfflineTimeout: TIMEOUT_S });
    await server.ephemeral.stop();
    h = new Harness(server);
    admin = new FleetplaneClient({ baseUrl: server.url ?? '', token: ADMIN });
    org = (await admin.organizations.create({ name: 'ci' })).id;
  });
  afterAll(async () => {
    await server?.close();
  });

  const enroll = (key: string, hostname: string): Promise<EnrolledDevice> => admin.devices.enroll(org, key, { hostname, public_key: wgKey() });
  const exists = async (id: string): Promise<boolean> => (await h.call('GET', paths.device(org, id), { token: ADMIN })).statusCode === 200;

  it('keeps ephemeral on the key and marks the devices it enrolls', async () => {
    const key = await admin.registrationKeys.create(org, { ephemeral: true });
    expect(key.ephemeral).toBe(true);
    expect((await admin.registrationKeys.list(org)).find((k) => k.id === key.id)?.ephemeral).toBe(true);
    const plain = await admin.registrationKeys.create(org, {});
    expect(plain.ephemeral).toBe(false);
    const device = await enroll(key.key, 'ci-mark');
    expect(device.ephemeral).toBe(true);
    expect((await enroll(plain.key, 'plain-mark')).ephemeral).toBe(false);
    // Only the server sets it.
    const res = await h.call('POST', paths.devices(org), { token: ADMIN, body: { hostname: 'x', public_key: wgKey(), ephemeral: true } });
    expect(res.statusCode).toBe(409);
  });

  it('deletes an offline ephemeral device after the timeout, not a non-ephemeral or an online one; frees its IP; watchers get the delete', async () => {
    const ephemeralKey = await admin.registrationKeys.create(org, { ephemeral: true });
    const plainKey = await admin.registrationKeys.create(org, {});
    // Earlier steps' devices are collected first, so this one is what the round below deletes.
    await until('earlier ephemeral devices to be collected', async () => {
      await server.ephemeral.runOnce();
      const rows = await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM objects WHERE kind = 'device' AND NOT deleted AND value->>'ephemeral' = 'true'`);
      return Number(rows[0]?.n) === 0;
    });
    const gone = await enroll(ephemeralKey.key, 'ci-offline');
    const kept = await enroll(plainKey.key, 'plain-offline');
    const online = await enroll(ephemeralKey.key, 'ci-tunnel');
    const reporting = await enroll(ephemeralKey.key, 'ci-reporting');

    // `online` holds a tunnel; `reporting` says it is online by PUT.
    const ws = new WebSocket(tunnelUrl(server.url ?? ''), { headers: { [HEADERS.authorization]: `Bearer ${online.device_token}` } });
    ws.on('message', (data: WebSocket.RawData) => {
      if (String(data).includes('"ping"')) ws.send(JSON.stringify({ type: 'pong' }));
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const reporter = new FleetplaneClient({ baseUrl: server.url ?? '', token: reporting.device_token });
    await reporter.devices.putStatus(org, reporting.id, { online: true, applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null });
    await until('the tunnel to count as online', async () => (await admin.devices.get(org, online.id)).status.online);

    const events: StreamEvent[] = [];
    const watching = new AbortController();
    let tail = false;
    const watch = (async () => {
      try {
        for await (const e of admin.watchEvents(org, [{ kind: 'device' }], { signal: watching.signal })) {
          events.push(e);
          if (e.type === 'tail') tail = true;
        }
      } catch {
        // Aborted at the end of the test.
      }
    })();
    await until('the watch to reach its tail', async () => tail);

    await until('the offline ephemeral device to pass the timeout', async () => {
      const d = await admin.devices.get(org, gone.id);
      return Date.now() - Date.parse(d.created_at) > TIMEOUT_S * 1000 * 2;
    });
    const round = await server.ephemeral.runOnce();
    expect(round).toEqual({ deleted: 1, gone: 0 });
    expect(await exists(gone.id)).toBe(false);
    expect(await exists(kept.id)).toBe(true);
    expect(await exists(online.id)).toBe(true);
    expect(await exists(reporting.id)).toBe(true);
    // Its token went with it.
    expect((await h.call('GET', paths.devices(org), { token: gone.device_token })).statusCode).toBe(401);

    await until('the watcher to get the delete', async () => events.some((e) => e.type === 'delete' && (e.value as Device).id === gone.id));
    watching.abort();
    await watch;

    // The next enrollment takes the freed address (the lowest free one).
    const next = await enroll(plainKey.key, 'plain-next');
    expect(next.tunnel_ip).toBe(gone.tunnel_ip);

    // Going offline starts the clock: the tunnel closes, the report says offline.
    ws.close();
    await reporter.devices.putStatus(org, reporting.id, { online: false, applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null });
    await until('both to be offline', async () => !(await admin.devices.get(org, online.id)).status.online && !(await admin.devices.get(org, reporting.id)).status.online);
    await until('both to be collected', async () => {
      await server.ephemeral.runOnce();
      return !(await exists(online.id)) && !(await exists(reporting.id));
    });
    expect(await exists(kept.id)).toBe(true);
  });
});

describe.each(backends().filter((b) => b.name === 'postgres'))('two servers sharing $name', (backend) => {
  let a: FleetServer | undefined;
  let b: FleetServer | undefined;

  beforeAll(async () => {
    if (!backend.available) return;
    const databaseUrl = await createDatabase(pgAdminUrl());
    const settings = { databaseUrl, logLevel: 'silent' as const, adminToken: ADMIN, ephemeralOfflineTimeout: 0.001 };
    a = await startServer(settings, { listen: false });
    b = await startServer(settings, { listen: false });
    await Promise.all([a.ephemeral.stop(), b.ephemeral.stop()]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it.skipIf(!backend.available)('only the oldest replica collects; no delete fails twice', async () => {
    if (!a || !b) throw new Error('servers not started');
    const h = new Harness(a);
    const org = (await h.createOrg()).id;
    const key = await h.createRegKey(org, { ephemeral: true });
    const devices = await Promise.all(Array.from({ length: 6 }, () => h.createDevice(org, {}, key.key)));
    const [ra, rb] = await Promise.all([a.ephemeral.runOnce(), b.ephemeral.runOnce()]);
    // a registered first: it is the oldest replica.
    expect(ra).toEqual({ deleted: devices.length, gone: 0 });
    expect(rb).toEqual({ deleted: 0, gone: 0 });
    const left = await a.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM objects WHERE kind = 'device' AND NOT deleted AND org_id = $1`, [org]);
    expect(Number(left[0]?.n)).toBe(0);
    // Once a is gone, b takes over.
    const more = await h.createDevice(org, {}, key.key);
    await a.replica.stop();
    expect(await b.ephemeral.runOnce()).toEqual({ deleted: 1, gone: 0 });
    expect((await new Harness(b).call('GET', paths.device(org, more.id), { token: ADMIN })).statusCode).toBe(404);
  });
});
