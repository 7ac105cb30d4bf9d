/**
 * Issue 12, "Bad characters", on the agent tunnel: a `status` frame whose
 * strings hold a NUL or an unpaired surrogate is answered `status_ack` with
 * `validation_failed` (docs/protocol.md "Agent tunnel"), as `PUT .../status`
 * answers 400, and is neither stored nor allowed to fail the batch that
 * other devices' statuses share.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paths, type Device, type DeviceStatusInput, type EnrolledDevice } from '../../src/protocol/index.js';
import { backends, errorCode } from '../server/fixtures.js';
import { startWatchServer, type WatchServer } from '../watch/support/watch-server.js';
import { StatusTunnel } from './support/status-tunnel.js';

const report = (over: Partial<DeviceStatusInput> = {}): DeviceStatusInput => ({
  applied_revision: 1,
  apply_error: null,
  local_endpoints: [],
  os: 'linux',
  agent_version: 'test',
  ...over,
});

describe.each(backends())('ill-formed strings in tunnel status frames on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let ws: WatchServer;
    beforeAll(async () => {
      ws = await startWatchServer(name, { statusFlushInterval: 0.2 });
    });
    afterAll(async () => {
      await ws?.close();
    });

    const BAD: [string, Partial<DeviceStatusInput>, string][] = [
      ['a NUL in apply_error', { apply_error: 'a\u0000b' }, '/apply_error'],
      ['an unpaired high surrogate in os', { os: 'linux\ud800' }, '/os'],
      ['an unpaired low surrogate in a local endpoint', { local_endpoints: ['\udc00192.0.2.1:51820'] }, '/local_endpoints/0'],
    ];

    // Fix: Fleet.tunnelStatus checks the frame's status with the REST checks (well-formed.ts) before batching it.
    it.each(BAD)('%s is answered validation_failed, not stored, and fails no other device', async (_, bad, path) => {
      const org = (await ws.h.createOrg()).id;
      const [a, b] = [await ws.h.createDevice(org), await ws.h.createDevice(org)] as [EnrolledDevice, EnrolledDevice];
      const [ta, tb] = [await StatusTunnel.open(ws.url, a.device_token), await StatusTunnel.open(ws.url, b.device_token)];
      try {
        expect((await ta.status(report({ agent_version: 'before' }))).error).toBeUndefined();
        // Sent together, so both wait for the same batch: a bad row there would fail the good one too.
        const [badAck, goodAck] = await Promise.all([ta.status(report(bad)), tb.status(report({ agent_version: 'good' }))]);
        expect(badAck.error?.code).toBe('validation_failed');
        expect(badAck.error?.message).toContain(`status${path}`);
        expect(goodAck.error).toBeUndefined();
        expect((await ws.h.ok<Device>(200, 'GET', paths.device(org, a.id))).status).toMatchObject({ agent_version: 'before', apply_error: null, os: 'linux' });
        expect((await ws.h.ok<Device>(200, 'GET', paths.device(org, b.id))).status.agent_version).toBe('good');
        // The tunnel stays usable, and PUT agrees on the same status.
        expect((await ta.status(report({ agent_version: 'after' }))).error).toBeUndefined();
        const put = await ws.h.call('PUT', paths.deviceStatus(org, a.id), { token: a.device_token, body: report(bad) });
        expect([put.statusCode, errorCode(put)]).toEqual([400, 'validation_failed']);
      } finally {
        ta.ws.terminate();
        tb.ws.terminate();
      }
    });
  });
});
