import { randomBytes } from 'node:crypto';
import type { Store } from '../../server/store/index.js';
import { percentile } from '../stats.js';
import { runAudited, SYSTEM_SCOPE } from '../../server/audit/index.js';
import type { WriteSeries } from './storage-probe-messages.js';

/** One device to PATCH, in its organization. */
export interface WriteTarget {
  orgId: string;
  deviceId: string;
}

let serial = 0;

/** A new organization with one device, through the Store (as `POST /organizations` and `POST .../devices` do). */
export async function createTarget(store: Store, label: string): Promise<WriteTarget> {
  // Audited as the server's own writes, as every store write must be.
  const org = await runAudited(SYSTEM_SCOPE, () => store.organizations.create({ name: `storage-${label}-${process.pid}-${serial++}` }));
  const created = await runAudited(SYSTEM_SCOPE, () =>
    store.devices.create(org.id, { hostname: `${label}-0`, public_key: randomBytes(32).toString('base64') }, undefined, 0, { all: true }),
  );
  return { orgId: org.id, deviceId: created.device.id };
}

/**
 * One committed write as `PATCH /devices/{id} {hostname}` makes it: a
 * transaction that locks the organization's revision counter, bumps it,
 * rewrites the device's row, signals the bus, then reads its status.
 */
export async function writeOnce(store: Store, t: WriteTarget): Promise<void> {
  await runAudited(SYSTEM_SCOPE, () => store.devices.patch(t.orgId, t.deviceId, { hostname: `w-${serial++}` }, { all: true }));
}

function series(latencies: readonly number[], seconds: number): WriteSeries {
  return {
    writes: latencies.length,
    seconds,
    writesPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** `n` writes to `target`, one after another. */
export async function sequentialWrites(store: Store, target: WriteTarget, n: number): Promise<WriteSeries> {
  const latencies: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const w0 = performance.now();
    await writeOnce(store, target);
    latencies.push(performance.now() - w0);
  }
  return series(latencies, (performance.now() - t0) / 1000);
}

/** `n` writes in all by `targets.length` writers at once, writer j writing to its own `targets[j]`. */
export async function concurrentWrites(store: Store, targets: readonly WriteTarget[], n: number): Promise<WriteSeries> {
  const latencies: number[] = [];
  let left = n;
  const writer = async (t: WriteTarget): Promise<void> => {
    while (left > 0) {
      left--;
      const w0 = performance.now();
      await writeOnce(store, t);
      latencies.push(performance.now() - w0);
    }
  };
  const t0 = performance.now();
  await Promise.all(targets.map(writer));
  return series(latencies, (performance.now() - t0) / 1000);
}
