/**
 * How one status report reaches the server: a status frame over the agent's
 * tunnel when it is up and acknowledges them, else `PUT .../status`.
 */
import type { Logger } from 'pino';
import { NotFoundError, type FleetplaneClient } from '../../client/index.js';
import type { DeviceStatusInput } from '../../protocol/index.js';
import type { SendStatusOptions, StatusRejection, StatusSendOutcome } from '../tunnel/index.js';

/**
 * The part of the tunnel client the status reporter uses (TunnelClient has
 * it; tests fake it). `sendStatus` follows TunnelClient.sendStatus: it
 * resolves with the outcome and rejects only with the signal's reason.
 */
export interface StatusTunnel {
  readonly connected: boolean;
  sendStatus(status: DeviceStatusInput, opts: SendStatusOptions): Promise<StatusSendOutcome>;
  onOpen(listener: () => void): () => void;
  /** Follows TunnelClient.onStatusRejected: refusals of frames sent as `sent` (or timed out). */
  onStatusRejected(listener: (rejection: StatusRejection) => void): () => void;
}

/** Which way a status went. */
export type DeliveryChannel = 'tunnel' | 'put';

export interface StatusDeliveryOptions {
  client: FleetplaneClient;
  org: string;
  logger: Logger;
  /** How long a status frame may wait for its ack before the status goes by PUT. */
  ackTimeoutMs: number;
  /** Bound of one PUT. */
  requestTimeoutMs: number;
}

/** A `not_found` status_ack, as a PUT's 404: the device is gone. */
function deviceGone(message: string): NotFoundError {
  return new NotFoundError({ code: 'not_found', status: 404, message, details: { from: 'tunnel_status_ack' } });
}

/** The status frame's fields: no `online`, a status coming over the tunnel says it. */
function frameStatus(s: DeviceStatusInput): DeviceStatusInput {
  const { online: _online, last_seen: _lastSeen, ...fields } = s;
  return fields;
}

/**
 * Delivers statuses, tunnel first:
 * - over the tunnel (when one is attached, connected, and hasn't left a
 *   frame unacknowledged since it (re)connected): delivered once acked, or
 *   once sent on a connection whose server acked a frame before (it
 *   answers such frames only when it can't record them: `refusedLate`);
 *   `not_found` means the device is gone (NotFoundError, as a PUT's 404);
 *   any other outcome (no connection, no ack in time, `unavailable`, another
 *   error) sends the same status by PUT at once.
 * - A frame left without ack marks the tunnel silent (a server that doesn't
 *   know status frames, or a stuck one): until the tunnel reconnects, every
 *   status goes by PUT directly, without waiting for acks that won't come.
 * - by PUT: its errors are thrown as they are (NotFoundError: the device is gone).
 */
export class StatusDelivery {
  readonly #o: StatusDeliveryOptions;
  #tunnel: StatusTunnel | undefined;
  /** Counts tunnel connections, so a timeout on an old one doesn't silence a newer one. */
  #generation = 0;
  #silent = false;
  /** The server refused a frame after it counted as delivered: the next status goes by PUT. */
  #putNext = false;

  constructor(options: StatusDeliveryOptions) {
    this.#o = options;
  }

  attach(tunnel: StatusTunnel): void {
    this.#tunnel = tunnel;
  }

  /**
   * True when statuses go over the tunnel: it is connected and acknowledges
   * them. Then the server sees the device online through the connection, and
   * periodic refreshes aren't needed.
   */
  get viaTunnel(): boolean {
    return this.#tunnel?.connected === true && !this.#silent;
  }

  /**
   * The server refused a status frame after it counted as delivered. Returns
   * NotFoundError when the device is gone (send nothing more); otherwise the
   * next delivery goes by PUT, and undefined.
   */
  refusedLate(rejection: StatusRejection): NotFoundError | undefined {
    if (rejection.code === 'not_found') return deviceGone(rejection.message);
    this.#putNext = true;
    this.#o.logger.warn({ code: rejection.code, reason: rejection.message, seq: rejection.seq }, 'the server could not record a status frame; reporting the status by PUT');
    return undefined;
  }

  /** A tunnel connection opened: status frames are tried again. */
  reconnected(): void {
    this.#generation++;
    this.#silent = false;
  }

  /**
   * Delivers `status` of device `id` (tunnel first unless `putOnly`) and says
   * which way it went. Throws NotFoundError when the device is gone (a
   * `not_found` ack or a 404), the PUT's error when it fails, the signal's
   * reason when it aborts.
   */
  async deliver(id: string, status: DeviceStatusInput, signal: AbortSignal, putOnly = false): Promise<DeliveryChannel> {
    const tunnel = this.#tunnel;
    if (!putOnly && !this.#putNext && tunnel && this.viaTunnel) {
      const generation = this.#generation;
      const outcome = await tunnel.sendStatus(frameStatus(status), { signal, timeoutMs: this.#o.ackTimeoutMs });
      if (outcome.type === 'acked' || outcome.type === 'sent') return 'tunnel';
      if (outcome.type === 'rejected' && outcome.code === 'not_found') throw deviceGone(outcome.message);
      if (outcome.type === 'timeout' && generation === this.#generation) {
        this.#silent = true;
        this.#o.logger.warn({ ackTimeoutMs: this.#o.ackTimeoutMs }, 'the server did not acknowledge the status frame; reporting by PUT until the tunnel reconnects');
      } else if (outcome.type === 'rejected') {
        this.#o.logger.warn({ code: outcome.code, reason: outcome.message }, 'the server refused the status frame; reporting it by PUT');
      }
    }
    await this.#o.client.devices.putStatus(this.#o.org, id, status, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(this.#o.requestTimeoutMs)]),
    });
    this.#putNext = false;
    return 'put';
  }
}
