/**
 * Makes the dataplane reflect snapshots, one at a time, and remembers which
 * revision it reflects.
 */
import type { Logger } from 'pino';
import { computeDesiredState, type Dataplane, type DesiredDataplane, type SkippedItem } from '../dataplane/index.js';
import { errorMessage } from '../errors.js';
import type { Snapshot } from './snapshot.js';
import { rejectionSummary, SnapshotAdmission, type RejectedObject } from './snapshot-admission.js';

export interface ReconcilerOptions {
  deviceId: string;
  interfaceName: string;
  privateKey: string;
  listenPort: number;
  dataplane: Dataplane;
  logger: Logger;
  /** Called after every reconcile that changed the applied revision or the apply error. */
  onState?: (state: ReconcilerState) => void;
  /** A path manager owns the peers' endpoints (see DesiredStateInput.pathManaged). */
  pathManaged?: boolean;
  /** Called with each desired state once the dataplane reflects it (the path manager's peers and candidates). */
  onApplied?: (desired: DesiredDataplane) => void;
}

/**
 * What the dataplane reflects. `applied_revision` stays at the last success
 * while `apply_error` is set. A snapshot holding objects that fail the
 * protocol's schemas is applied without them (see SnapshotAdmission), but
 * is no success: `apply_error` says what was rejected.
 */
export interface ReconcilerState {
  applied_revision: number | null;
  apply_error: string | null;
  /** RFC 3339 of the last successful apply (or confirmation that nothing needed applying). */
  applied_at: string | null;
  /** Inputs the desired state left out (bad peers, routes, ranges) at the last success. */
  skipped: SkippedItem[];
  /** Objects of the last snapshot that failed the protocol's schemas. */
  rejected: RejectedObject[];
}

/**
 * - `applied`: the dataplane now reflects the snapshot (changed or not),
 *   without the `rejected` objects (their last valid state instead).
 * - `stale`: the snapshot is older than what is applied; nothing done.
 * - `failed`: computing or applying failed; the previous state stays, `apply_error` is set.
 */
export type ReconcileOutcome =
  | { type: 'applied'; revision: number; changed: boolean; actions: string[]; rejected: RejectedObject[] }
  | { type: 'stale'; revision: number; applied: number }
  | { type: 'failed'; revision: number; error: Error };

export interface ReconcileOptions {
  /** Apply even when the desired state equals the last applied one (repairs drift made by hand). */
  force?: boolean;
  signal?: AbortSignal;
}

interface Waiter {
  revision: number;
  resolve: () => void;
}

/**
 * Serializes reconciles (its queue is bounded by its callers: the reconcile
 * loop runs one at a time; force-syncs are limited by the local API and the
 * tunnel's request limit). Each computes the desired state of `snapshot` and
 * applies it unless it equals what was last applied (then only the applied
 * revision moves). A snapshot older than the applied revision is ignored,
 * so the applied revision never goes back. Failures never throw: they come
 * back as `failed` outcomes and set `apply_error`.
 */
export class Reconciler {
  readonly #o: ReconcilerOptions;
  #queue: Promise<unknown> = Promise.resolve();
  #lastDesired: string | null = null;
  /** The last apply failed: the next one applies even an unchanged desired state. */
  #applyFailed = false;
  readonly #admission = new SnapshotAdmission();
  #state: ReconcilerState = { applied_revision: null, apply_error: null, applied_at: null, skipped: [], rejected: [] };
  #waiters = new Set<Waiter>();

  constructor(options: ReconcilerOptions) {
    this.#o = options;
  }

  get state(): Readonly<ReconcilerState> {
    return this.#state;
  }

  /** Applies `snapshot` after every reconcile queued before it. */
  reconcile(snapshot: Snapshot, options: ReconcileOptions = {}): Promise<ReconcileOutcome> {
    const run = this.#queue.then(() => this.#reconcile(snapshot, options));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the dataplane reflects `revision` or later; false when `signal` aborts first. */
  waitForRevision(revision: number, signal: AbortSignal): Promise<boolean> {
    if ((this.#state.applied_revision ?? -1) >= revision) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        revision,
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(true);
        },
      };
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        resolve(false);
      };
      this.#waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async #reconcile(received: Snapshot, options: ReconcileOptions): Promise<ReconcileOutcome> {
    const applied = this.#state.applied_revision;
    if (applied !== null && received.revision < applied) {
      return { type: 'stale', revision: received.revision, applied };
    }
    const { snapshot, rejected } = this.#admission.admit(received);
    this.#noteRejected(rejected, received.revision);
    let desired: DesiredDataplane;
    let text: string;
    try {
      if (!snapshot) throw new Error(rejectionSummary(rejected));
      desired = computeDesiredState({
        deviceId: this.#o.deviceId,
        interfaceName: this.#o.interfaceName,
        privateKey: this.#o.privateKey,
        listenPort: this.#o.listenPort,
        organization: snapshot.organization,
        devices: snapshot.devices,
        securityGroups: snapshot.securityGroups,
        pathManaged: this.#o.pathManaged === true,
      });
      text = JSON.stringify(desired);
    } catch (err) {
      return this.#failed(received, err, rejected);
    }
    let changed = false;
    let actions: string[] = [];
    if (options.force === true || text !== this.#lastDesired || this.#applyFailed) {
      try {
        const result = await this.#o.dataplane.apply(desired, options.signal);
        changed = result.changed;
        actions = result.actions;
      } catch (err) {
        // An apply cut short by shutdown says nothing about the dataplane: keep the state as it was.
        if (options.signal?.aborted) return { type: 'failed', revision: received.revision, error: err instanceof Error ? err : new Error(String(err)) };
        return this.#failed(received, err, rejected);
      }
    }
    this.#applyFailed = false;
    const fresh = text !== this.#lastDesired;
    this.#lastDesired = text;
    if (fresh) {
      try {
        this.#o.onApplied?.(desired);
      } catch (err) {
        this.#o.logger.error({ err }, 'applied-state listener failed');
      }
    }
    const previous = this.#state;
    const whole = rejected.length === 0;
    this.#state = {
      applied_revision: whole ? received.revision : previous.applied_revision,
      apply_error: whole ? null : rejectionSummary(rejected),
      applied_at: new Date().toISOString(),
      skipped: desired.skipped,
      rejected,
    };
    if (changed) {
      this.#o.logger.info({ revision: received.revision, source: received.source, peers: desired.peers.length, actions }, 'dataplane updated');
    }
    if (previous.apply_error !== null && whole) this.#o.logger.info({ revision: received.revision }, 'dataplane apply recovered');
    if (desired.skipped.length > 0 && JSON.stringify(previous.skipped) !== JSON.stringify(desired.skipped)) {
      this.#o.logger.warn({ skipped: desired.skipped }, 'some inputs were left out of the desired state');
    }
    if (previous.applied_revision !== this.#state.applied_revision || previous.apply_error !== this.#state.apply_error) this.#emit();
    const now = this.#state.applied_revision ?? -1;
    for (const w of this.#waiters) {
      if (w.revision <= now) {
        this.#waiters.delete(w);
        w.resolve();
      }
    }
    return { type: 'applied', revision: received.revision, changed, actions, rejected };
  }

  /** Logs a set of rejected objects once, when it differs from the previous snapshot's. */
  #noteRejected(rejected: RejectedObject[], revision: number): void {
    if (JSON.stringify(rejected) === JSON.stringify(this.#state.rejected)) return;
    if (rejected.length > 0) {
      this.#o.logger.error({ revision, rejected }, 'the server sent objects that do not match the protocol; none is applied (each is kept at its last valid state, or left out)');
    }
  }

  #failed(snapshot: Snapshot, err: unknown, rejected: RejectedObject[]): ReconcileOutcome {
    const error = err instanceof Error ? err : new Error(String(err));
    const message = errorMessage(error);
    const repeated = this.#state.apply_error === message;
    this.#applyFailed = true;
    this.#state = { ...this.#state, apply_error: message, rejected };
    if (!repeated) {
      this.#o.logger.error({ err: error, revision: snapshot.revision }, 'dataplane apply failed; the previous state stays');
      this.#emit();
    }
    return { type: 'failed', revision: snapshot.revision, error };
  }

  #emit(): void {
    try {
      this.#o.onState?.(this.#state);
    } catch (err) {
      this.#o.logger.error({ err }, 'reconcile state listener failed');
    }
  }
}
