/**
 * Issue 12, "Bad characters", on the agent tunnel: a `status` frame whose
 * strings hold a NUL or an unpaired surrogate is answered `status_ack` with
 * `validation_failed` (docs/protocol.md "Agent tunnel"), as `PUT .../status`
 * answers 400, and is neither stored nor allowed to fail the batch that
 * other devices' statuses share.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  HEADERS,
  ROUTES,
  bearerAuthorization,
  decodeTunnelFrame,
  paths,
  type Device,
  type DeviceStatusInput,
  type EnrolledDevice,
  type TunnelStatusAck,
} from '../../src/protocol/index.js';
import { backends, errorCode } from '../server/fixtures.js';
import { eventually, startWatchServer, type WatchServer } from '../watch/support/watch-server.js';

const report = (over: Partial<DeviceStatusInput> = {}): DeviceStatusInput => ({
  applied_revision: 1,
  apply_error: null,
  local_endpoints: [],
  os: 'linux',
  agent_version: 'test',
  ...over,
});

/** Opens a device's tunnel; `status` sends one frame and resolves with its ack. */
async function openTunnel(url: string, token: string): Promise<{ ws: WebSocket; status: (s: unknown) => Promise<TunnelStatusAck> }> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}${ROUTES.agentTunnel}`, { headers: { [HEADERS.authorization]: bearerAuthorization(token) } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const acks = new Map<number, TunnelStatusAck>();
  ws.on('message', (data: WebSocket.RawData) => {
    const frame = decodeTunnelFrame(data.toString());
    if (frame && 'type' in frame && frame.type === 'status_ack') acks.set(frame.seq, frame);
  });
  let seq = 0;
  return {
    ws,
    async status(status) {
      const n = ++seq;
      ws.send(JSON.stringify({ type: 'status', seq: n, status }));
      await eventually(() => acks.has(n), `the ack of status ${n}`);
      return acks.get(n)!;
    },
  };
}

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
      const [ta, tb] = [await openTunnel(ws.url, a.device_token), await openTunnel(ws.url, b.device_token)];
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
