/**
 * The agent's side of relayed packets: one loopback UDP socket per relayed
 * peer. WireGuard's endpoint for that peer is the socket's address, so what
 * WireGuard sends there is the peer's traffic, and what the relay delivers
 * for the peer is sent from there to WireGuard's port (WireGuard roams to it,
 * as to any source of authenticated packets).
 */
import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from 'pino';
import { RELAY_KEY_BYTES, RELAY_MAX_MESSAGE_BYTES, RELAY_RECORD_HEADER_BYTES } from '../../protocol/index.js';

/**
 * Socket buffer sizes, set explicitly: at the kernel's defaults (about
 * 208 KiB) a burst from WireGuard overflows the receive queue before the
 * event loop reads it, and throughput through the relay dropped by half.
 * The kernel caps them at net.core.rmem_max / wmem_max.
 */
export const RELAY_SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;
/** Packets read from WireGuard and not yet sent, per peer; past it they are dropped (UDP semantics). */
export const RELAY_PENDING_PACKETS = 512;

const LOOPBACK = '127.0.0.1';

interface Proxy {
  readonly key: Buffer;
  readonly socket: Socket;
  port: number;
  pending: Buffer[];
}

export interface RelayProxiesOptions {
  /** WireGuard's listen port on this machine. */
  wireguardPort: () => number;
  /** Sends one message (`dst_key | record+`) to the relay; false when it was dropped (no session, or over its bound). */
  send: (message: Buffer) => boolean;
  logger: Logger;
}

/** Counters for the path report and tests. */
export interface RelayProxyCounters {
  packetsOut: number;
  packetsIn: number;
  dropped: number;
}

export class RelayProxies {
  readonly counters: RelayProxyCounters = { packetsOut: 0, packetsIn: 0, dropped: 0 };
  readonly #byKey = new Map<string, Proxy>();
  readonly #byPort = new Map<number, Proxy>();
  readonly #dirty = new Set<Proxy>();
  #flushQueued = false;

  constructor(private readonly options: RelayProxiesOptions) {}

  /** The loopback endpoint (`127.0.0.1:port`) that WireGuard uses for `publicKey` on the relay; opens its socket on first use. */
  async endpointFor(publicKey: string): Promise<string> {
    const proxy = this.#byKey.get(publicKey) ?? (await this.#open(publicKey));
    return `${LOOPBACK}:${proxy.port}`;
  }

  /** Whether WireGuard's endpoint for a peer is one of these sockets (the peer is on the relay). */
  isRelayEndpoint(endpoint: string | null): boolean {
    if (endpoint === null || !endpoint.startsWith(`${LOOPBACK}:`)) return false;
    return this.#byPort.has(Number(endpoint.slice(LOOPBACK.length + 1)));
  }

  /** Keeps the sockets of these peers, closes the others (peers gone or no longer relayed). */
  retain(publicKeys: ReadonlySet<string>): void {
    for (const [key, proxy] of this.#byKey) if (!publicKeys.has(key)) this.#close(key, proxy);
  }

  /** A message from the relay: `src_key | record+`, each record sent to WireGuard from the source's socket. */
  deliver(message: Buffer): void {
    if (message.length <= RELAY_KEY_BYTES + RELAY_RECORD_HEADER_BYTES) return;
    const proxy = this.#byKey.get(message.toString('base64', 0, RELAY_KEY_BYTES));
    // A packet of a peer this agent doesn't relay: WireGuard would drop it anyway (unknown key or not on the relay).
    if (!proxy) {
      this.counters.dropped++;
      return;
    }
    let at = RELAY_KEY_BYTES;
    while (at + RELAY_RECORD_HEADER_BYTES <= message.length) {
      const length = message.readUInt16BE(at);
      at += RELAY_RECORD_HEADER_BYTES;
      if (length === 0 || at + length > message.length) break;
      proxy.socket.send(message.subarray(at, at + length));
      this.counters.packetsIn++;
      at += length;
    }
  }

  /** Closes every socket. */
  close(): void {
    for (const [key, proxy] of this.#byKey) this.#close(key, proxy);
  }

  async #open(publicKey: string): Promise<Proxy> {
    const key = Buffer.from(publicKey, 'base64');
    if (key.length !== RELAY_KEY_BYTES) throw new Error(`not a WireGuard key: ${publicKey}`);
    const socket = createSocket({ type: 'udp4', recvBufferSize: RELAY_SOCKET_BUFFER_BYTES, sendBufferSize: RELAY_SOCKET_BUFFER_BYTES });
    const proxy: Proxy = { key, socket, port: 0, pending: [] };
    socket.on('error', (err) => this.options.logger.warn({ err, peer: publicKey }, 'relay socket error'));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, LOOPBACK, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // Connected to WireGuard's port: each send skips the address lookup, and the kernel delivers nothing from
    // elsewhere, so every packet the listener below gets is WireGuard's.
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(this.options.wireguardPort(), LOOPBACK, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    socket.on('message', (packet) => this.#queue(proxy, packet));
    // Another call may have opened one meanwhile: keep the first.
    const existing = this.#byKey.get(publicKey);
    if (existing) {
      socket.close();
      return existing;
    }
    proxy.port = socket.address().port;
    this.#byKey.set(publicKey, proxy);
    this.#byPort.set(proxy.port, proxy);
    return proxy;
  }

  #close(key: string, proxy: Proxy): void {
    this.#byKey.delete(key);
    this.#byPort.delete(proxy.port);
    this.#dirty.delete(proxy);
    proxy.socket.close();
  }

  #queue(proxy: Proxy, packet: Buffer): void {
    if (proxy.pending.length >= RELAY_PENDING_PACKETS) {
      this.counters.dropped++;
      return;
    }
    proxy.pending.push(packet);
    this.#dirty.add(proxy);
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // What one turn of the event loop read goes out as one message per peer.
      setImmediate(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushQueued = false;
    for (const proxy of this.#dirty) {
      let i = 0;
      while (i < proxy.pending.length) {
        let size = RELAY_KEY_BYTES;
        let j = i;
        while (j < proxy.pending.length && size + RELAY_RECORD_HEADER_BYTES + (proxy.pending[j]?.length ?? 0) <= RELAY_MAX_MESSAGE_BYTES) {
          size += RELAY_RECORD_HEADER_BYTES + (proxy.pending[j]?.length ?? 0);
          j++;
        }
        if (j === i) {
          // A single packet too large for a message: WireGuard never sends one, so drop it.
          this.counters.dropped++;
          i++;
          continue;
        }
        const message = Buffer.allocUnsafe(size);
        proxy.key.copy(message, 0);
        let at = RELAY_KEY_BYTES;
        for (let k = i; k < j; k++) {
          const packet = proxy.pending[k] as Buffer;
          message.writeUInt16BE(packet.length, at);
          packet.copy(message, at + RELAY_RECORD_HEADER_BYTES);
          at += RELAY_RECORD_HEADER_BYTES + packet.length;
        }
        if (this.options.send(message)) this.counters.packetsOut += j - i;
        else this.counters.dropped += j - i;
        i = j;
      }
      proxy.pending = [];
    }
    this.#dirty.clear();
  }
}
