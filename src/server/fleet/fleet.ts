import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { Ajv } from 'ajv';
import { CONVERGENCE_MIN_INTERVAL_MS, DeviceStatusInput, FORMATS, STATUS_ACK_MODES, statusSignal, type TunnelStatusAck, type TunnelStatusFrame } from '../../protocol/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Settings } from '../config/settings.js';
import type { Store } from '../store/index.js';
import type { RouteModule } from '../http/context.js';
import type { FanOutTimes } from '../watch/fan-out-times.js';
import { CachedRead } from '../../util/cached-read.js';
import { findIllFormed } from '../http/well-formed.js';
import { ackLatencyObserver } from './ack-latency.js';
import { ConvergenceStreams } from './convergence-streams.js';
import type { StreamOwner } from '../streams/index.js';
import { FleetMetrics } from './fleet-metrics.js';
import { PathKinds, pathKindOf } from './path-kinds.js';
import { Presence } from './presence.js';
import { StatusBatcher } from './status-batcher.js';
import { fleetRoutes } from './routes.js';

function refused(seq: number, path: string, message: string): TunnelStatusAck {
  return { type: 'status_ack', seq, error: { code: 'validation_failed', message: `status${path}: ${message}` } };
}

export interface FleetOptions {
  store: Store;
  bus: SignalBus;
  settings: Settings;
  /** This replica's id: presence rows are its. */
  replicaId: string;
  registry: Registry;
  logger: Logger;
  /** When the watch engine's tail caches reached each recent head: the start of the ACK latency. */
  fanOutTimes: FanOutTimes;
  /** The owner of the convergence streams' connections. */
  streams: StreamOwner;
}

/** Statuses waiting for a batch before new ones are refused: a fleet's worth of simultaneous ACKs. */
const MAX_PENDING_STATUSES = 100_000;
/** Rows per statement. */
const MAX_BATCH = 20_000;
/** How long the device totals of `/metrics` are reused: frequent scrapes cost one query per this. */
const DEVICE_TOTALS_TTL_MS = 5_000;

const validStatus = new Ajv({ formats: { ...FORMATS }, allErrors: false }).compile(DeviceStatusInput);

/**
 * The fleet loop's in-memory side on one replica: device statuses (ACKs)
 * from `PUT` and tunnel frames written in batches, presence from open
 * tunnels and watch streams, and live convergence streams. The database
 * sees one statement per batch, never one per agent.
 */
export class Fleet {
  readonly metrics: FleetMetrics;
  readonly batcher: StatusBatcher;
  readonly presence: Presence;
  readonly convergence: ConvergenceStreams;
  /** The path kind of each device connected here, from its latest status recorded here (`fleetplane_devices_by_path`). */
  readonly paths = new PathKinds();

  constructor(o: FleetOptions) {
    this.metrics = new FleetMetrics(o.registry);
    const paths = this.paths;
    this.metrics.observePaths((kind) => paths.count(kind));
    this.batcher = new StatusBatcher({
      write: (batch) => o.store.devices.writeStatusBatch(batch),
      replicaId: o.replicaId,
      intervalMs: o.settings.statusFlushInterval * 1000,
      maxPending: MAX_PENDING_STATUSES,
      maxBatch: MAX_BATCH,
      onFlushed: (orgs) => {
        for (const org of orgs) o.bus.notify(statusSignal(org));
      },
      onChanged: ackLatencyObserver(o.fanOutTimes, this.metrics.ackLatency),
      // Only devices connected here: one whose last connection closed while its status was being written is not
      // followed (nothing would remove it), nor a device that only PUTs (no disconnection ever removes it).
      onRecorded: (write) => {
        if (this.presence.has(write.deviceId)) paths.set(write.deviceId, pathKindOf(write.input.peers));
      },
      metrics: this.metrics,
      logger: o.logger.child({ component: 'status-batcher' }),
    });
    const totals = new CachedRead(() => o.store.convergence.deviceTotals(), DEVICE_TOTALS_TTL_MS);
    this.metrics.observeDevices(() =>
      totals.get().catch((err: unknown) => {
        o.logger.warn({ err }, 'reading the device totals for /metrics failed');
        return undefined;
      }),
    );
    const metrics = this.metrics;
    const batcher = this.batcher;
    this.presence = new Presence({
      connected(deviceId, orgId) {
        metrics.connectedDevices.inc();
        batcher.connected(deviceId, orgId);
      },
      disconnected(deviceId, orgId) {
        metrics.connectedDevices.dec();
        paths.delete(deviceId);
        batcher.disconnected(deviceId, orgId);
      },
    });
    this.convergence = new ConvergenceStreams({
      source: (org) => o.store.convergence.view(org),
      bus: o.bus,
      owner: o.streams,
      minIntervalMs: CONVERGENCE_MIN_INTERVAL_MS,
      heartbeatMs: o.settings.bookmarkInterval * 1000,
      bufferLimit: 256 * 1024,
      metrics: this.metrics,
      logger: o.logger.child({ component: 'convergence' }),
    });
  }

  routes(): RouteModule {
    return fleetRoutes(this);
  }

  /**
   * A status frame from a device's tunnel: validated, batched, and answered
   * by one call of `reply` once recorded (or refused); a frame whose `ack` is
   * `errors` is answered only when refused. Callbacks, not
   * promises: 10,000 agents ACK each change, and each promise is garbage
   * (and an async hook call) per ACK.
   */
  tunnelStatus(device: { deviceId: string; orgId: string }, frame: TunnelStatusFrame, reply: (ack: TunnelStatusAck) => void): void {
    if (!validStatus(frame.status)) {
      const issue = validStatus.errors?.[0];
      reply(refused(frame.seq, issue?.instancePath ?? '', issue?.message ?? 'does not match the schema'));
      return;
    }
    // What PUT's body parser refuses (json-body.ts): a NUL or an unpaired surrogate passes the schema,
    // then fails the whole batch's statement, and with it every other device's status in that batch.
    const bad = findIllFormed(frame.status);
    if (bad) {
      reply(refused(frame.seq, bad.path, bad.expected));
      return;
    }
    const quiet = frame.ack === STATUS_ACK_MODES.errors;
    // The callback keeps the number, not the frame: what waits for a batch is a fleet's worth of callbacks.
    const seq = frame.seq;
    this.batcher.enqueue({ deviceId: device.deviceId, orgId: device.orgId, input: frame.status, via: 'tunnel' }, (outcome) => {
      if (outcome.ok) {
        // 10,000 agents ACKing a change would cost 10,000 more frames (a third of the change's socket calls) to say nothing.
        if (!quiet) reply({ type: 'status_ack', seq });
      } else reply({ type: 'status_ack', seq, error: { code: outcome.error.code, message: outcome.error.message } });
    });
  }

  /** Stops following convergence (the stream owner ended the streams), writes what is pending (disconnections included: call after connections closed). */
  async close(): Promise<void> {
    this.convergence.close();
    await this.batcher.close();
  }
}
