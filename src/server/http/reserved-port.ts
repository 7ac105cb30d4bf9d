import { createServer, type Server, type Socket } from 'node:net';
import { lookup } from 'node:dns/promises';
import type { Logger } from 'pino';

/**
 * The listen queue asked for; the kernel caps it at net.core.somaxconn, as Go's
 * servers size theirs. Node's default, 511, overflowed when 10,000 agents
 * connected at once: the kernel dropped 635 of their SYNs, and each of those
 * agents waited out a TCP retransmission (1 s, then 3 s).
 */
export const LISTEN_BACKLOG = 65_535;

/**
 * Connections that may wait while the server starts; past it a new one is
 * closed (its client retries with backoff, as it would a refused one).
 * Each costs a paused socket and nothing read.
 */
const MAX_WAITING = 1_024;

/**
 * The API port, bound before storage starts or migrates: a port in use fails
 * the start at once, not after the database's start. Connections that
 * arrive before the app can serve them wait, with nothing read, and are
 * handed to it with the port (`handTo`); a failed start closes them
 * (`close`).
 */
export class ReservedPort {
  readonly #server: Server;
  readonly #waiting = new Set<Socket>();
  #refused = 0;

  private constructor(server: Server) {
    this.#server = server;
    server.on('connection', (socket: Socket) => {
      if (this.#waiting.size >= MAX_WAITING) {
        this.#refused++;
        socket.destroy();
        return;
      }
      this.#waiting.add(socket);
      socket.once('close', () => this.#waiting.delete(socket));
      socket.on('error', () => socket.destroy());
    });
  }

  /**
   * Binds `host:port` (a name such as `localhost` is looked up: one address,
   * as Node's own listen binds). Rejects with the bind's error (EADDRINUSE,
   * EACCES) at once.
   */
  static async bind(host: string, port: number, backlog: number): Promise<ReservedPort> {
    const address = await bindAddress(host);
    const server = createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: address, port, backlog }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new ReservedPort(server);
  }

  /** The bound port (the one chosen, for port 0). */
  get port(): number {
    const addr = this.#server.address();
    return typeof addr === 'object' && addr ? addr.port : 0;
  }

  /**
   * Gives the bound port to `server` (Node's `listen(handle)`), then the
   * connections that waited, as if it had accepted them.
   */
  async handTo(server: Server, backlog: number, logger: Logger): Promise<void> {
    this.#server.removeAllListeners('connection');
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#server, backlog, () => {
        server.off('error', reject);
        resolve();
      });
    });
    if (this.#refused > 0) logger.warn({ refused: this.#refused, limit: MAX_WAITING }, 'connections closed while the server started: too many waited');
    for (const socket of this.#waiting) {
      socket.removeAllListeners('close');
      socket.removeAllListeners('error');
      if (socket.destroyed) continue;
      server.emit('connection', socket);
      socket.resume();
    }
    this.#waiting.clear();
  }

  /** A failed start: the port and the waiting connections close. */
  close(): void {
    for (const socket of this.#waiting) socket.destroy();
    this.#waiting.clear();
    this.#server.close();
  }
}

/**
 * Fails at once when `host:port` can't be bound (its listener binds it for
 * good later in the start, or in another process: a cluster's workers).
 */
export async function probePort(host: string, port: number, flag: string): Promise<void> {
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host, port, exclusive: true }, () => resolve());
    });
  } catch (err) {
    throw bindError(host, port, flag, err);
  } finally {
    probe.close();
  }
}

/** One line that says which setting's port can't be bound, and why. */
export function bindError(host: string, port: number, flag: string, err: unknown): Error {
  const code = err instanceof Error && 'code' in err ? err.code : undefined;
  const why =
    code === 'EADDRINUSE'
      ? 'the port is in use by another process'
      : code === 'EACCES'
        ? 'permission denied (ports below 1024 need privileges)'
        : code === 'EADDRNOTAVAIL'
          ? 'no such address on this machine'
          : err instanceof Error
            ? err.message
            : String(err);
  return new Error(`cannot listen on ${host}:${port} (${flag}): ${why}`, { cause: err });
}

/**
 * The API port, bound now. Fastify would open a second, internal server for
 * `localhost` (127.0.0.1 and ::1); connection limits, certificate reloads
 * and the client-error handler hold app.server only, so one address is
 * bound, as Node's own listen does for a name.
 */
export async function reservePort(settings: { host: string; port: number }): Promise<ReservedPort> {
  try {
    return await ReservedPort.bind(settings.host, settings.port, LISTEN_BACKLOG);
  } catch (err) {
    throw bindError(settings.host, settings.port, '--port', err);
  }
}

/**
 * The one address a listener binds for `host`: a name such as `localhost` is
 * looked up, as Node's own listen does, so that connection limits,
 * certificate reloads and the client-error handler see one server (Fastify
 * would open a second, internal one for `localhost`).
 */
export async function bindAddress(host: string): Promise<string> {
  return host === 'localhost' ? (await lookup('localhost')).address : host;
}
