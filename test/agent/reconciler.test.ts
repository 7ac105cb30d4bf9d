import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Reconciler, type ReconcilerState, type Snapshot } from '../../src/agent/index.js';
import { DataplaneError, type ApplyResult, type Dataplane, type DataplaneDescription, type DesiredDataplane } from '../../src/agent/dataplane/index.js';
import { ReconcileLoop } from '../../src/agent/sync/reconcile-loop.js';
import { device, deviceId, keyPair, organization } from './dataplane/fixtures.js';

/** Records applies; fails while `failing` is set. */
class FakeDataplane implements Dataplane {
  readonly mode = 'render' as const;
  applied: DesiredDataplane[] = [];
  calls = 0;
  failing = false;
  async apply(desired: DesiredDataplane): Promise<ApplyResult> {
    this.calls++;
    if (this.failing) throw new DataplaneError('render', 'disk full');
    const changed = JSON.stringify(this.applied.at(-1)) !== JSON.stringify(desired);
    this.applied.push(desired);
    return { changed, actions: changed ? ['wrote'] : [] };
  }
  async cleanup(): Promise<void> {}
  async describe(): Promise<DataplaneDescription> {
    throw new Error('not used');
  }
}

function snapshot(revision: number, peers: number): Snapshot {
  const devices = [device(1), ...Array.from({ length: peers }, (_, i) => device(i + 2))];
  return { revision, organization: organization(), devices, securityGroups: [], source: 'watch' };
}

function setup() {
  const dataplane = new FakeDataplane();
  const states: ReconcilerState[] = [];
  const reconciler = new Reconciler({
    deviceId: deviceId(1),
    interfaceName: 'wg0',
    privateKey: keyPair(1).privateKey,
    listenPort: 51820,
    dataplane,
    logger: pino({ level: 'silent' }),
    onState: (s) => states.push({ ...s }),
  });
  return { dataplane, reconciler, states };
}

describe('Reconciler', () => {
  it('applies a snapshot and reports its revision', async () => {
    const { dataplane, reconciler, states } = setup();
    expect(await reconciler.reconcile(snapshot(5, 2))).toMatchObject({ type: 'applied', revision: 5, changed: true });
    expect(dataplane.applied[0]?.peers.map((p) => p.device_id)).toEqual([deviceId(2), deviceId(3)]);
    expect(reconciler.state).toMatchObject({ applied_revision: 5, apply_error: null });
    expect(states.map((s) => s.applied_revision)).toEqual([5]);
  });

  it('moves the applied revision without touching the dataplane when the desired state is unchanged, unless forced', async () => {
    const { dataplane, reconciler } = setup();
    await reconciler.reconcile(snapshot(5, 1));
    await reconciler.reconcile(snapshot(9, 1));
    expect(dataplane.calls).toBe(1);
    expect(reconciler.state.applied_revision).toBe(9);
    await reconciler.reconcile(snapshot(9, 1), { force: true });
    expect(dataplane.calls).toBe(2);
  });

  it('ignores a snapshot older than the applied revision: the applied revision never goes back', async () => {
    const { dataplane, reconciler } = setup();
    await reconciler.reconcile(snapshot(10, 3));
    expect(await reconciler.reconcile(snapshot(8, 1))).toEqual({ type: 'stale', revision: 8, applied: 10 });
    expect(dataplane.calls).toBe(1);
    expect(reconciler.state.applied_revision).toBe(10);
  });

  it('on a failed apply keeps the applied revision, reports the error, and applies again on the next reconcile', async () => {
    const { dataplane, reconciler, states } = setup();
    await reconciler.reconcile(snapshot(5, 1));
    dataplane.failing = true;
    const failed = await reconciler.reconcile(snapshot(6, 2));
    expect(failed.type).toBe('failed');
    expect(reconciler.state).toMatchObject({ applied_revision: 5, apply_error: 'render: disk full' });
    // The same failure again is not reported twice.
    await reconciler.reconcile(snapshot(6, 2));
    expect(states.filter((s) => s.apply_error !== null)).toHaveLength(1);
    dataplane.failing = false;
    expect(await reconciler.reconcile(snapshot(6, 2))).toMatchObject({ type: 'applied', revision: 6 });
    expect(reconciler.state).toMatchObject({ applied_revision: 6, apply_error: null });
    expect(dataplane.applied.at(-1)?.peers).toHaveLength(2);
    expect(states.at(-1)).toMatchObject({ applied_revision: 6, apply_error: null });
  });

  it('a failure that is reverted by the next change still re-applies (the machine may be half way)', async () => {
    const { dataplane, reconciler } = setup();
    await reconciler.reconcile(snapshot(5, 1));
    dataplane.failing = true;
    await reconciler.reconcile(snapshot(6, 2));
    dataplane.failing = false;
    const before = dataplane.calls;
    await reconciler.reconcile(snapshot(7, 1));
    expect(dataplane.calls).toBe(before + 1);
    expect(reconciler.state).toMatchObject({ applied_revision: 7, apply_error: null });
  });

  it('reports a snapshot without this device as an apply error', async () => {
    const { dataplane, reconciler } = setup();
    const s: Snapshot = { ...snapshot(3, 1), devices: [device(2)] };
    expect((await reconciler.reconcile(s)).type).toBe('failed');
    expect(reconciler.state.apply_error).toMatch(/not in the organization/);
    expect(dataplane.calls).toBe(0);
  });

  it('waitForRevision resolves once that revision (or a later one) is applied', async () => {
    const { reconciler } = setup();
    const stop = new AbortController();
    const waited = reconciler.waitForRevision(7, stop.signal);
    await reconciler.reconcile(snapshot(6, 1));
    await reconciler.reconcile(snapshot(8, 1));
    expect(await waited).toBe(true);
    const never = reconciler.waitForRevision(100, stop.signal);
    stop.abort();
    expect(await never).toBe(false);
  });
});

describe('ReconcileLoop', () => {
  it('retries a failed apply with backoff until it succeeds, without a new change', async () => {
    const { dataplane, reconciler } = setup();
    dataplane.failing = true;
    let failures = 0;
    const real = dataplane.apply.bind(dataplane);
    dataplane.apply = async (d) => {
      if (dataplane.failing && ++failures >= 3) dataplane.failing = false;
      return real(d);
    };
    const loop = new ReconcileLoop({
      reconciler,
      source: () => snapshot(4, 1),
      resyncIntervalMs: 60_000,
      logger: pino({ level: 'silent' }),
      backoff: { initialMs: 2, maxMs: 5 },
    });
    const stop = new AbortController();
    const run = loop.run(stop.signal);
    loop.request();
    expect(await reconciler.waitForRevision(4, AbortSignal.timeout(5_000))).toBe(true);
    stop.abort();
    await run;
    expect(dataplane.calls).toBe(3);
    expect(reconciler.state.apply_error).toBeNull();
  });

  it('re-applies at every resync interval (drift repair) even when nothing changed', async () => {
    const { dataplane, reconciler } = setup();
    const loop = new ReconcileLoop({ reconciler, source: () => snapshot(4, 1), resyncIntervalMs: 20, logger: pino({ level: 'silent' }) });
    const stop = new AbortController();
    const run = loop.run(stop.signal);
    for (let i = 0; i < 200 && dataplane.calls < 3; i++) await new Promise((r) => setTimeout(r, 10));
    stop.abort();
    await run;
    expect(dataplane.calls).toBeGreaterThanOrEqual(3);
  });

  it('does nothing while the source has no consistent snapshot', async () => {
    const { dataplane, reconciler } = setup();
    let current: Snapshot | undefined;
    const loop = new ReconcileLoop({ reconciler, source: () => current, resyncIntervalMs: 60_000, logger: pino({ level: 'silent' }) });
    const stop = new AbortController();
    const run = loop.run(stop.signal);
    loop.request();
    await new Promise((r) => setTimeout(r, 20));
    expect(dataplane.calls).toBe(0);
    current = snapshot(2, 1);
    loop.request();
    expect(await reconciler.waitForRevision(2, AbortSignal.timeout(5_000))).toBe(true);
    stop.abort();
    await run;
  });
});
