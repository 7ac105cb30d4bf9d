/**
 * A TCP proxy between the SDK and a real server that cuts connections at
 * seeded random points: after a random number of bytes from the server (so
 * mid-line, mid-header, mid-chunk), or after a random delay. A cut is a
 * reset, a close, or (with `stalls`) a black hole: the sockets stay open and
 * nothing more gets through, which only a client's idle timeout detects. It
 * can also be held closed: every connection is cut and new ones are dropped
 * at once.
 * The seed fixes the sequence of cut points; which connection draws which
 * point still depends on timing, so a seed narrows a failure, not replays it.
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/** mulberry32: a small seeded PRNG, so a failing seed can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ChaosOptions {
  /** Largest number of server→client bytes a connection may carry before it is cut. */
  maxBytes: number;
  /** Longest life of a connection before it is cut, in ms. */
  maxLifeMs: number;
  /** Some cuts leave the connection open and silent instead of closing it. */
  stalls?: boolean;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class ChaosProxy {
  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  /** Black-holed connections, closed by `close()`; at most one per cut. */
  readonly #stalled = new Set<Pair>();
  readonly #random: () => number;
  #chaos: ChaosOptions | undefined;
  #held = false;
  /** Connections accepted (held ones included). */
  connections = 0;
  /** Connections cut by chaos, `cutAll` or `hold`. */
  cuts = 0;
  /** Of those, the ones black-holed. */
  stalls = 0;

  private constructor(
    private readonly target: { host: string; port: number },
    seed: number,
  ) {
    this.#random = seededRandom(seed);
    this.#server = createServer((client) => this.#accept(client));
  }

  static async start(targetUrl: string, seed = 1): Promise<ChaosProxy> {
    const u = new URL(targetUrl);
    const proxy = new ChaosProxy({ host: u.hostname, port: Number(u.port) }, seed);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Connections open and passing data. */
  get open(): number {
    return this.#pairs.size;
  }

  /** Starts (or, with undefined, stops) cutting connections at random points. */
  chaos(opts: ChaosOptions | undefined): void {
    this.#chaos = opts;
    for (const p of this.#pairs) this.#arm(p);
  }

  /** Closes every open connection (no black holes). */
  cutAll(): void {
    for (const p of [...this.#pairs]) this.#cut(p, 'close');
  }

  /** Black-holes every open connection: they stay open and silent. */
  stallAll(): void {
    for (const p of [...this.#pairs]) this.#cut(p, 'stall');
  }

  /** Held: everything open is cut and new connections are dropped until `release()`. */
  hold(): void {
    this.#held = true;
    this.cutAll();
  }

  release(): void {
    this.#held = false;
  }

  async close(): Promise<void> {
    this.#chaos = undefined;
    this.cutAll();
    for (const p of this.#stalled) {
      p.client.destroy();
      p.upstream.destroy();
    }
    this.#stalled.clear();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    this.connections += 1;
    client.on('error', () => undefined);
    if (this.#held) {
      this.cuts += 1;
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    upstream.on('error', () => undefined);
    const pair: Pair = { client, upstream, timer: undefined };
    this.#pairs.add(pair);
    let budget = Infinity;
    const rearm = (): void => {
      budget = this.#chaos ? Math.floor(this.#random() * this.#chaos.maxBytes) : Infinity;
    };
    rearm();
    client.on('data', (d: Buffer) => {
      if (this.#pairs.has(pair)) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (!this.#pairs.has(pair)) return;
      if (!this.#chaos) budget = Infinity;
      else if (budget === Infinity) rearm();
      if (d.length <= budget) {
        budget -= d.length;
        client.write(d);
        return;
      }
      // Cut mid-chunk: the client gets a prefix of what the server sent, then a dead socket.
      const part = d.subarray(0, budget);
      budget = 0;
      client.write(part, () => this.#cut(pair, 'random'));
    });
    const end = (): void => {
      if (this.#stalled.delete(pair)) {
        client.destroy();
        upstream.destroy();
      } else this.#cut(pair, 'ended');
    };
    client.on('close', end);
    upstream.on('close', end);
    this.#arm(pair);
  }

  #arm(p: Pair): void {
    if (p.timer !== undefined) clearTimeout(p.timer);
    p.timer = undefined;
    if (!this.#chaos) return;
    p.timer = setTimeout(() => this.#cut(p, 'random'), this.#random() * this.#chaos.maxLifeMs);
  }

  /** `random`: a chaos cut (reset, close or black hole); `ended`: one side closed by itself. */
  #cut(p: Pair, how: 'random' | 'close' | 'stall' | 'ended'): void {
    if (!this.#pairs.delete(p)) return;
    if (p.timer !== undefined) clearTimeout(p.timer);
    if (how === 'ended') {
      p.client.destroy();
      p.upstream.destroy();
      return;
    }
    this.cuts += 1;
    const r = how === 'random' ? this.#random() : 1;
    if (how === 'stall' || (r < 0.25 && this.#chaos?.stalls)) {
      this.stalls += 1;
      this.#stalled.add(p);
      return;
    }
    if (r < 0.6) p.client.resetAndDestroy();
    else p.client.destroy();
    p.upstream.destroy();
  }
}
