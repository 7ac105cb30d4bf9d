import type { Server, Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import { Counter, Gauge } from 'prom-client';
import type { Logger } from 'pino';
import { DEFAULT_SETTINGS, type Settings } from '../config/settings.js';
import type { Metrics } from '../metrics.js';
import { ApiError } from '../errors.js';
import { openFilesLimit } from '../../util/open-files-limit.js';
import { rawErrorResponse } from './raw-error-response.js';

/** Which listener a connection arrived on. */
export type ListenerName = 'api' | 'private';

/** Which limit refused a connection. */
export type RefusalReason = 'total' | 'per_source';

/** What a refused client is told to wait before connecting again. */
export const REFUSED_RETRY_AFTER_S = 5;

/** What a refused connection is written on plain HTTP, by the limit that refused it. */
const REFUSALS: Record<RefusalReason, string> = {
  total: refusal('the server holds as many connections as it accepts; retry later'),
  per_source: refusal('this address holds as many connections as the server accepts from one address; retry later'),
};

function refusal(message: string): string {
  return rawErrorResponse(new ApiError('too_many_connections', message, undefined, { retryAfterS: REFUSED_RETRY_AFTER_S }));
}

/** Refusals are logged at most this often (with the count since the last line): a flood must not flood the log too. */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * The most connections `openFiles` descriptors leave room for. The rest is
 * kept for what isn't a client connection (database and Redis pools, files,
 * the event loop), so that a full server still reaches its database and
 * answers on the connections it holds.
 */
export function connectionCeiling(configured: number, openFiles: number | undefined): number {
  if (openFiles === undefined) return configured;
  const reserve = Math.max(128, Math.ceil(openFiles / 10));
  return Math.max(1, Math.min(configured, openFiles - reserve));
}

/** `::ffff:192.0.2.1` and `192.0.2.1` are one source. */
function sourceOf(socket: Socket): string {
  const address = socket.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/**
 * Counts the open connections of every listener of one server at their
 * `connection` event, and refuses those past `--max-connections` (all
 * listeners together: they share the process's descriptors) or past
 * `--max-connections-per-source` (public listener only: its peers are
 * agents and operators, the private listener's are replicas). A refused
 * connection is closed at once, before anything it sent is read; on plain
 * HTTP it is first written a 503 `too_many_connections` with `Retry-After`
 * (with TLS nothing is written: answering would cost a handshake). A client
 * whose request was already on its way may see a reset instead; either way
 * nothing it sent was acted on. The server makes one and gives it to every
 * listener it opens.
 */
export class ConnectionLimiter {
  static fromSettings(metrics: Metrics, settings: Settings): ConnectionLimiter {
    return new ConnectionLimiter(metrics, settings.maxConnections, settings.maxConnectionsPerSource, openFilesLimit());
  }

  /** The total limit in force: `--max-connections`, lowered to what the open-files limit allows. */
  readonly maxTotal: number;
  #open = 0;
  readonly #bySource = new Map<string, number>();
  readonly #openGauge: Gauge<'listener'>;
  readonly #refused: Counter<'listener' | 'reason'>;
  #ceilingLogged = false;
  #refusalLog = { at: 0, suppressed: 0 };

  constructor(
    metrics: Metrics,
    private readonly configuredTotal: number,
    /** 0: no limit. */
    readonly maxPerSource: number,
    private readonly openFiles: number | undefined,
  ) {
    this.maxTotal = connectionCeiling(configuredTotal, openFiles);
    const registers = [metrics.registry];
    this.#openGauge = new Gauge({ name: 'fleetplane_connections_open', help: 'Open connections by listener.', labelNames: ['listener'] as const, registers });
    const limit = new Gauge({ name: 'fleetplane_connections_limit', help: 'Open connections accepted in all before new ones are refused.', registers });
    limit.set(this.maxTotal);
    this.#refused = new Counter({
      name: 'fleetplane_connections_refused_total',
      help: 'Connections closed at once because a connection limit was reached, by listener and limit (total, per_source).',
      labelNames: ['listener', 'reason'] as const,
      registers,
    });
  }

  /** Counts and limits the connections `server` accepts from now on. */
  attach(server: Server, opts: { listener: ListenerName; perSource: boolean; logger: Logger }): void {
    if (!this.#ceilingLogged && this.maxTotal < this.configuredTotal) {
      this.#ceilingLogged = true;
      // The default is sized for 10,000 agents; most machines' limit is lower, and that is no fault at each start.
      const level = this.configuredTotal === DEFAULT_SETTINGS.maxConnections ? 'info' : 'warn';
      opts.logger[level](
        { maxConnections: this.configuredTotal, openFilesLimit: this.openFiles, using: this.maxTotal },
        '--max-connections is above what the open-files limit leaves room for; using the lower limit (raise LimitNOFILE / ulimit -n to accept more)',
      );
    }
    this.#openGauge.set({ listener: opts.listener }, 0);
    const answer = !(server instanceof TlsServer);
    // Off by default (agents behind one NAT share an address): then no source is counted at all.
    const perSource = opts.perSource && this.maxPerSource > 0;
    // After the server's own listener: a refused socket is then one that closed at once, which every server handles.
    server.on('connection', (socket: Socket) => {
      const source = perSource ? sourceOf(socket) : undefined;
      const reason = this.#refusal(source);
      if (reason) {
        this.#refuse(socket, reason, answer, opts.listener, opts.logger);
        return;
      }
      this.#admit(socket, source, opts.listener);
    });
  }

  /** `source`: the connection's address, when its listener counts per source. */
  #refusal(source: string | undefined): RefusalReason | undefined {
    if (this.#open >= this.maxTotal) return 'total';
    if (source !== undefined && (this.#bySource.get(source) ?? 0) >= this.maxPerSource) return 'per_source';
    return undefined;
  }

  #admit(socket: Socket, source: string | undefined, listener: ListenerName): void {
    this.#open++;
    this.#openGauge.inc({ listener });
    if (source !== undefined) this.#bySource.set(source, (this.#bySource.get(source) ?? 0) + 1);
    socket.once('close', () => {
      this.#open--;
      this.#openGauge.dec({ listener });
      if (source === undefined) return;
      const left = (this.#bySource.get(source) ?? 1) - 1;
      if (left > 0) this.#bySource.set(source, left);
      else this.#bySource.delete(source);
    });
  }

  #refuse(socket: Socket, reason: RefusalReason, answer: boolean, listener: ListenerName, logger: Logger): void {
    this.#refused.inc({ listener, reason });
    const now = Date.now();
    if (now - this.#refusalLog.at >= REFUSAL_LOG_INTERVAL_MS) {
      const limits = { maxConnections: this.maxTotal, maxConnectionsPerSource: this.maxPerSource };
      logger.warn(
        { listener, reason, source: sourceOf(socket), open: this.#open, ...limits, refusedSinceLastLine: this.#refusalLog.suppressed },
        'connection refused: connection limit reached',
      );
      this.#refusalLog = { at: now, suppressed: 0 };
    } else {
      this.#refusalLog.suppressed++;
    }
    if (answer && socket.writable) socket.write(REFUSALS[reason]);
    socket.destroy();
  }
}
