import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { DeviceStatusInput } from '../../src/protocol/index.js';
import { FleetMetrics } from '../../src/server/fleet/fleet-metrics.js';
import { StatusBatcher } from '../../src/server/fleet/status-batcher.js';
import type { StatusBatch, StatusWrite } from '../../src/server/store/index.js';

describe('StatusBatcher', () => {
  function batcher(intervalMs = 0) {
    const batches: StatusBatch[] = [];
    const metrics = new FleetMetrics(new Registry());
    const b = new StatusBatcher({
      write: async (batch) => {
        batches.push(batch);
        return { gone: new Set(), repeated: new Set() };
      },
      replicaId: 'r1',
      intervalMs,
      maxPending: 100,
      maxBatch: 100,
      onFlushed: () => undefined,
      metrics,
      logger: pino({ level: 'silent' }),
    });
    const statuses = () => batches.flatMap((x) => x.statuses);
    const value = async (m: { get(): Promise<{ values: { value: number }[] }> }) => (await m.get()).values[0]?.value ?? 0;
    return { b, statuses, unchanged: () => value(metrics.statusUnchanged), pending: () => value(metrics.statusPending) };
  }
  const tunnel = (input: DeviceStatusInput): StatusWrite => ({ deviceId: 'd1', orgId: 'o1', input, via: 'tunnel' });
  const base: DeviceStatusInput = { applied_revision: 7, apply_error: null, local_endpoints: ['10.0.0.1:51820'], os: 'linux', agent_version: '1.0.0' };

  it('answers a tunnel report that repeats the last one written without a write; any other field, an endpoint included, is written', async () => {
    const { b, statuses, unchanged } = batcher();
    b.connected('d1', 'o1');
    expect(await b.submit(tunnel(base))).toEqual({ ok: true });
    expect(statuses()).toHaveLength(1);

    // The same report, parsed again and in another key order.
    const reordered = Object.fromEntries(Object.entries(base).reverse()) as DeviceStatusInput;
    expect(await b.submit(tunnel(reordered))).toEqual({ ok: true });
    expect(statuses()).toHaveLength(1);
    expect(await unchanged()).toBe(1);

    for (const changed of [
      { ...base, local_endpoints: ['10.0.0.2:51820'] },
      { ...base, local_endpoints: ['10.0.0.2:51820', '10.0.0.3:51820'] },
      { ...base, agent_version: '1.1.0' },
      { ...base, apply_error: 'boom' },
      { ...base, apply_error: 'boom', online: true },
    ]) {
      const before = statuses().length;
      expect(await b.submit(tunnel(changed))).toEqual({ ok: true });
      expect(statuses()).toHaveLength(before + 1);
      expect(statuses().at(-1)?.input).toEqual(changed);
    }
    // Once disconnected, the device's next report is written again.
    b.disconnected('d1', 'o1');
    await b.flush();
    const before = statuses().length;
    await b.submit(tunnel({ ...base, apply_error: 'boom', online: true }));
    expect(statuses()).toHaveLength(before + 1);
    await b.close();
  });

  it('writes a tunnel report that repeats the last tunnel report when a PUT was written after it', async () => {
    const { b, statuses, unchanged } = batcher();
    b.connected('d1', 'o1');
    await b.submit(tunnel(base));
    // The PUT's row holds its `online` and other fields: the same tunnel report again must replace it.
    await b.submit({ ...tunnel({ ...base, applied_revision: 8 }), via: 'put' });
    await b.submit(tunnel(base));
    expect(statuses().map((s) => s.via)).toEqual(['tunnel', 'put', 'tunnel']);
    expect(await unchanged()).toBe(0);
    await b.close();
  });

  it('reports how many statuses wait for a batch when scraped', async () => {
    const { b, statuses, pending } = batcher(60_000);
    expect(await pending()).toBe(0);
    const answers = ['d1', 'd2', 'd3'].map((deviceId) => b.submit({ ...tunnel(base), deviceId }));
    // A newer status of a waiting device replaces it.
    answers.push(b.submit({ ...tunnel(base), deviceId: 'd1', input: { ...base, applied_revision: 8 } }));
    expect(await pending()).toBe(3);
    await b.flush();
    expect(await Promise.all(answers)).toEqual(answers.map(() => ({ ok: true })));
    expect(statuses()).toHaveLength(3);
    expect(await pending()).toBe(0);
    await b.close();
  });
});
