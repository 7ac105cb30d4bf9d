import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { answerStun } from './answer.js';
import type { StunMetrics, StunPortRole } from './stun-metrics.js';

/** Replies one socket may have queued (the kernel's buffer full) before new requests are dropped unanswered. */
const DEFAULT_SEND_QUEUE_LIMIT = 1024;
/** Least time between two warnings about failed sends; the ones in between are counted into the next. */
const SEND_WARNING_INTERVAL_MS = 10_000;

export interface StunServerOptions {
  /** Address to bind (an IP address or a name to look up); `::` also answers IPv4 on a dual-stack host. */
  host: string;
  /** The primary port (0: any free port). */
  port: number;
  /** The alternate port (0: any free port). */
  altPort: number;
  metrics: StunMetrics;
  logger: Logger;
  /** Replies queued per socket before further requests are dropped (default 1024). */
  sendQueueLimit?: number;
}

/** A STUN responder on two UDP ports. Stateless: every replica (and every worker) answers alike. */
export interface StunServer {
  /** The bound primary port (the one configured, or the one chosen for 0). */
  readonly port: number;
  /** The bound alternate port. */
  readonly altPort: number;
  /** Stops answering and releases both ports. */
  close(): Promise<void>;
}

/** A port could not be bound; the message names the setting, the port and the cause in one line. */
export class StunStartError extends Error {
  override readonly name = 'StunStartError';
}

/** Binds both ports, or throws StunStartError (having released whatever it bound). */
export async function startStunServer(opts: StunServerOptions): Promise<StunServer> {
  const address = isIP(opts.host) ? opts.host : (await lookup(opts.host)).address;
  const limit = opts.sendQueueLimit ?? DEFAULT_SEND_QUEUE_LIMIT;
  const warnings = { lastAt: -Infinity, suppressed: 0 };
  const onSendError = (err: Error, to: RemoteInfo): void => {
    const now = performance.now();
    if (now - warnings.lastAt < SEND_WARNING_INTERVAL_MS) {
      warnings.suppressed++;
      return;
    }
    opts.logger.warn({ err, to: `${to.address}:${to.port}`, alsoFailedSinceLastWarning: warnings.suppressed }, 'sending a STUN response failed');
    warnings.lastAt = now;
    warnings.suppressed = 0;
  };
  const sockets: Socket[] = [];
  const closeAll = (): Promise<void> => Promise.all(sockets.map((s) => closeSocket(s, opts.logger))).then(() => undefined);
  try {
    const primary = await bindSocket(address, opts.port, 'stun-port');
    sockets.push(primary);
    const alternate = await bindSocket(address, opts.altPort, 'stun-alt-port');
    sockets.push(alternate);
    serve(primary, 'primary', opts.metrics, limit, onSendError, opts.logger);
    serve(alternate, 'alternate', opts.metrics, limit, onSendError, opts.logger);
    const server: StunServer = { port: primary.address().port, altPort: alternate.address().port, close: closeAll };
    // At debug: the ports are bound before the storage starts, and a start that fails after that says only why.
    opts.logger.debug({ address, port: server.port, altPort: server.altPort }, 'answering STUN');
    return server;
  } catch (err) {
    await closeAll();
    throw err;
  }
}

function bindSocket(address: string, port: number, flag: string): Promise<Socket> {
  const socket = createSocket({ type: isIP(address) === 6 ? 'udp6' : 'udp4' });
  return new Promise<Socket>((resolve, reject) => {
    const onError = (err: Error): void => {
      socket.close();
      reject(new StunStartError(`--${flag} ${port} (UDP): ${err.message}`, { cause: err }));
    };
    socket.once('error', onError);
    socket.bind(port, address, () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

function serve(socket: Socket, role: StunPortRole, metrics: StunMetrics, limit: number, onSendError: (err: Error, to: RemoteInfo) => void, logger: Logger): void {
  const counters = {
    answered: metrics.requests.labels(role, 'answered'),
    refused: metrics.requests.labels(role, 'refused'),
    ignored: metrics.requests.labels(role, 'ignored'),
    dropped: metrics.requests.labels(role, 'dropped'),
  };
  // After bind, an 'error' is a socket failure the responder can't fix: it is logged, and the port stays open.
  socket.on('error', (err) => logger.error({ err, port: role }, 'STUN socket error'));
  socket.on('message', (datagram, from) => {
    const { outcome, reply } = answerStun(datagram, from);
    if (!reply) {
      counters[outcome].inc();
      return;
    }
    if (socket.getSendQueueCount() >= limit) {
      counters.dropped.inc();
      return;
    }
    counters[outcome].inc();
    socket.send(reply, from.port, from.address, (err) => {
      if (err) onSendError(err, from);
    });
  });
}

function closeSocket(socket: Socket, logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    try {
      socket.close(() => resolve());
    } catch (err) {
      // Already closed (a failed bind closes its socket itself).
      logger.debug({ err }, 'STUN socket was already closed');
      resolve();
    }
  });
}
