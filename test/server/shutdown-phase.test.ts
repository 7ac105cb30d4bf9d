import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paths, type EnrolledDevice } from '../../src/protocol/index.js';
import type { FleetServer } from '../../src/server/index.js';
import { Harness, startTestServer } from './fixtures.js';

const STATUS = { applied_revision: 1, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'test' };

/**
 * docs/protocol.md "Operational endpoints", shutdown: while draining, requests
 * on open connections are served with `Connection: close`; once the last
 * status batch is being written, they get 503 with Retry-After.
 */
describe('requests while the server shuts down', () => {
  let server: FleetServer;
  let h: Harness;
  let org: string;
  let device: EnrolledDevice;
  beforeAll(async () => {
    server = await startTestServer('pglite');
    h = new Harness(server);
    org = (await h.createOrg()).id;
    device = await h.createDevice(org);
  });
  afterAll(async () => {
    await server.close();
  });

  function phase(p: 'open' | 'draining' | 'refusing'): void {
    server.ctx.shutdownPhase = () => p;
  }

  it('draining: a status PUT is recorded and answered, with Connection: close', async () => {
    phase('draining');
    const res = await h.call('PUT', paths.deviceStatus(org, device.id), { token: device.device_token, body: STATUS });
    expect(res.statusCode).toBe(200);
    expect(res.headers['connection']).toBe('close');
    phase('open');
    const read = await h.call('GET', paths.device(org, device.id), { token: h.admin });
    expect(read.json()).toMatchObject({ status: { applied_revision: 1 } });
  });

  it('refusing: 503 unavailable with Retry-After', async () => {
    phase('refusing');
    const res = await h.call('PUT', paths.deviceStatus(org, device.id), { token: device.device_token, body: { ...STATUS, applied_revision: 2 } });
    phase('open');
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: 'unavailable' } });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('close() drains first, and refuses only once the last status batch is being written', async () => {
    const other = await startTestServer('pglite');
    const batcherClose = other.fleet.close.bind(other.fleet);
    let phaseAtLastBatch: string | undefined;
    other.fleet.close = async () => {
      phaseAtLastBatch = other.ctx.shutdownPhase();
      return batcherClose();
    };
    expect(other.ctx.shutdownPhase()).toBe('open');
    const closing = other.close();
    expect(other.ctx.shutdownPhase()).toBe('draining');
    await closing;
    expect(phaseAtLastBatch).toBe('refusing');
  });

  it('open: no Connection: close', async () => {
    const res = await h.call('GET', paths.device(org, device.id), { token: h.admin });
    expect(res.statusCode).toBe(200);
    expect(res.headers['connection']).not.toBe('close');
  });
});
