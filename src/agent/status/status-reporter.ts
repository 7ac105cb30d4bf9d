/**
 * The device's report to the server, sent through a DirtySet: flushed at
 * once when the status changes (coalesced while a flush is in flight, at
 * most one flush per min spacing); a failed flush is retried as a whole
 * after a backoff (never sooner than the server's Retry-After); nothing is
 * sent once the device is known to be deleted.
 *
 * Which way (see StatusDelivery): a status frame over the agent's tunnel
 * when one is attached and acknowledges them (delivered once acked, or once
 * sent after the server acked one on that connection; a frame it refuses
 * later is sent again by PUT), else `PUT .../devices/{id}/status`. Every tunnel (re)connection sends the
 * current status again over it. Every interval without change, a PUT
 * refreshes `last_seen`, but only while statuses don't go over the tunnel:
 * there the connection itself tells the server the device is online.
 */
import type { Logger } from 'pino';
import { AuthError, NotFoundError, retryAfterOf, type FleetplaneClient } from '../../client/index.js';
import { Backoff, type BackoffPolicy } from '../../util/backoff.js';
import { MAX_REPORTED_PEERS, type DeviceStatusInput, type PeerPath } from '../../protocol/index.js';
import { DirtySet } from './dirty-set.js';
import { errorMessage } from '../errors.js';
import { StatusDelivery, type DeliveryChannel, type StatusTunnel } from './status-delivery.js';
import { logRetry } from '../transient.js';
import { DEFAULT_STATUS_ACK_TIMEOUT_MS } from '../tunnel/index.js';
import { sleep } from '../../util/sleep.js';
import { Wakeup } from '../wakeup.js';

/** What the agent reports; `online` and `last_seen` are added when sending. */
export interface StatusFields {
  applied_revision: number | null;
  apply_error: string | null;
  local_endpoints: string[];
  os: string | null;
  agent_version: string | null;
  /** The path to each peer (docs/protocol.md "Path reports"); absent where no path manager runs. */
  peers?: PeerPath[];
  peers_truncated?: boolean;
}

export interface StatusReporterOptions {
  client: FleetplaneClient;
  org: string;
  deviceId: string;
  /** Time between reports (PUT refreshes of `last_seen`) when nothing changes, while statuses don't go over the tunnel. */
  intervalMs: number;
  initial: StatusFields;
  logger: Logger;
  /** Retry timing of failed flushes (default 1 s doubling to the interval). */
  backoff?: Partial<BackoffPolicy>;
  /**
   * Least time between two flushes: changes within it go up together. Keeps a
   * burst of changes from costing the server one PUT per change per device.
   * Default min(1 s, interval / 4).
   */
  minSpacingMs?: number;
  /** Bound of one PUT. Default 10 s. */
  requestTimeoutMs?: number;
  /** How long a status frame waits for the server's ack before the status goes by PUT. Default 5 s. */
  ackTimeoutMs?: number;
  /** The server answered that the device doesn't exist (404, or a `not_found` status ack) or refused the token (401/403). */
  onRejected?: (kind: 'device_gone' | 'token_refused', error: Error) => void;
}

export interface StatusReporterStats {
  /** Statuses delivered, either way. */
  sent: number;
  /** Of `sent`, those that went over the tunnel (acked, or sent after the server acked one on that connection). */
  sent_via_tunnel: number;
  /** Which way the last delivered status went. */
  last_channel: DeliveryChannel | null;
  /** Failed PUTs. */
  failed: number;
  last_sent_at: string | null;
  last_error: string | null;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

// The limits of DeviceStatusInput in docs/protocol.md's schema.
const MAX_ERROR_CHARS = 4096;
const MAX_LOCAL_ENDPOINTS = 64;
const MAX_LOCAL_ENDPOINT_CHARS = 64;

function bounded(fields: StatusFields, online: boolean): DeviceStatusInput {
  return {
    online,
    applied_revision: fields.applied_revision,
    apply_error: fields.apply_error === null ? null : fields.apply_error.slice(0, MAX_ERROR_CHARS),
    local_endpoints: fields.local_endpoints.filter((e) => e.length <= MAX_LOCAL_ENDPOINT_CHARS).slice(0, MAX_LOCAL_ENDPOINTS),
    os: fields.os === null ? null : fields.os.slice(0, 256),
    agent_version: fields.agent_version === null ? null : fields.agent_version.slice(0, 64),
    ...(fields.peers === undefined ? {} : { peers: fields.peers.slice(0, MAX_REPORTED_PEERS), peers_truncated: fields.peers_truncated === true || fields.peers.length > MAX_REPORTED_PEERS }),
  };
}

function sameFields(a: StatusFields, b: StatusFields): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class StatusReporter {
  readonly #o: StatusReporterOptions;
  readonly #dirty = new DirtySet<string, DeviceStatusInput>({ maxKeys: 1 });
  readonly #wake = new Wakeup();
  readonly #backoff: Backoff;
  readonly #delivery: StatusDelivery;
  #fields: StatusFields;
  #stats: StatusReporterStats = { sent: 0, sent_via_tunnel: 0, last_channel: null, failed: 0, last_sent_at: null, last_error: null };

  constructor(options: StatusReporterOptions) {
    this.#o = options;
    this.#fields = { ...options.initial };
    this.#backoff = new Backoff({ initialMs: 1_000, maxMs: options.intervalMs, resetAfterMs: Number.MAX_SAFE_INTEGER, ...options.backoff });
    this.#delivery = new StatusDelivery({
      client: options.client,
      org: options.org,
      logger: options.logger,
      ackTimeoutMs: options.ackTimeoutMs ?? DEFAULT_STATUS_ACK_TIMEOUT_MS,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    });
  }

  /**
   * Sends statuses over `tunnel` from now on (see the file comment), and the
   * current status again at each of its (re)connections. Returns the function
   * that stops listening to its connections.
   */
  attachTunnel(tunnel: StatusTunnel): () => void {
    this.#delivery.attach(tunnel);
    const offOpen = tunnel.onOpen(() => this.#tunnelOpened());
    const offRejected = tunnel.onStatusRejected((rejection) => {
      const gone = this.#delivery.refusedLate(rejection);
      if (gone) this.#deviceGone(gone);
      else if (this.#dirty.mark(this.#o.deviceId, bounded(this.#fields, true))) this.#wake.fire();
    });
    // A tunnel already up when attached counts as just opened.
    if (tunnel.connected) this.#tunnelOpened();
    return () => {
      offOpen();
      offRejected();
    };
  }

  #tunnelOpened(): void {
    this.#delivery.reconnected();
    if (this.#dirty.mark(this.#o.deviceId, bounded(this.#fields, true))) this.#wake.fire();
  }

  get fields(): Readonly<StatusFields> {
    return this.#fields;
  }

  get stats(): Readonly<StatusReporterStats> {
    return this.#stats;
  }

  /** True once the device is known to be deleted: nothing more is sent. */
  get deleted(): boolean {
    return this.#dirty.isDeleted(this.#o.deviceId);
  }

  /** Merges `changes`; when that changes anything, the status is marked dirty and a flush is woken. */
  update(changes: Partial<StatusFields>): void {
    const next = { ...this.#fields, ...changes };
    if (sameFields(next, this.#fields)) return;
    this.#fields = next;
    if (this.#dirty.mark(this.#o.deviceId, bounded(next, true))) this.#wake.fire();
  }

  /** The device was deleted: drop what is pending and never send again. */
  deviceDeleted(): void {
    this.#dirty.delete(this.#o.deviceId);
  }

  /**
   * Flushes on change, at every tunnel (re)connection, and every interval
   * while statuses don't go over the tunnel, until `signal` aborts. A failed
   * flush waits a backoff (full jitter, at least the server's Retry-After),
   * then the whole status goes again.
   */
  async run(signal: AbortSignal): Promise<void> {
    // The first report goes when the first reconcile updates the status (or the tunnel connects); the interval only refreshes.
    let nextTick = Date.now() + this.#o.intervalMs;
    let retry = false;
    let lastFlush = 0;
    const spacing = this.#o.minSpacingMs ?? Math.min(1_000, this.#o.intervalMs / 4);
    while (!signal.aborted) {
      if (!retry) await this.#wake.wait(signal, nextTick - Date.now());
      const early = lastFlush + spacing - Date.now();
      if (early > 0) await sleep(early, signal);
      if (signal.aborted) break;
      lastFlush = Date.now();
      if (Date.now() >= nextTick) {
        // Over the tunnel the server sees the device online through the connection: no refresh needed.
        if (!this.#delivery.viaTunnel) this.#dirty.mark(this.#o.deviceId, bounded(this.#fields, true));
        nextTick = Date.now() + this.#o.intervalMs;
      }
      try {
        await this.#flush(signal);
        this.#backoff.reset();
        retry = false;
      } catch (err) {
        if (signal.aborted) break;
        const delayMs = this.#backoff.next(0, retryAfterOf(err));
        logRetry(this.#o.logger, err, { delayMs: Math.round(delayMs) }, 'status report failed; retrying');
        await sleep(delayMs, signal);
        retry = true;
      }
    }
  }

  /**
   * One last report with `online: false` (shutdown), by PUT (the tunnel is
   * closing then), bounded by `timeoutMs`; failures are logged.
   */
  async goodbye(timeoutMs: number): Promise<void> {
    if (!this.#dirty.mark(this.#o.deviceId, bounded(this.#fields, false))) return;
    try {
      await this.#flush(AbortSignal.timeout(timeoutMs), true);
    } catch (err) {
      this.#o.logger.warn({ err }, 'the final status report (offline) failed');
    }
  }

  /** The device is gone: nothing may be sent for it again (RFD 28: no resend after a delete). */
  #deviceGone(err: NotFoundError): void {
    this.#dirty.delete(this.#o.deviceId);
    this.#o.onRejected?.('device_gone', err);
  }

  async #flush(signal: AbortSignal, putOnly = false): Promise<void> {
    await this.#dirty.flush(async (entries) => {
      for (const [id, status] of entries) {
        let channel: DeliveryChannel;
        try {
          channel = await this.#delivery.deliver(id, status, signal, putOnly);
        } catch (err) {
          if (err instanceof NotFoundError) {
            this.#deviceGone(err);
            continue;
          }
          this.#stats.failed++;
          this.#stats.last_error = errorMessage(err);
          if (err instanceof AuthError) this.#o.onRejected?.('token_refused', err);
          throw err;
        }
        this.#stats.sent++;
        if (channel === 'tunnel') this.#stats.sent_via_tunnel++;
        this.#stats.last_channel = channel;
        this.#stats.last_sent_at = new Date().toISOString();
        this.#stats.last_error = null;
      }
    });
  }
}
