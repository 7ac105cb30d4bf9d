import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { decodeTunnelFrame, type TunnelFrame, type TunnelResponse } from '../../src/protocol/index.js';

/** One tunnel as the fake server sees it. */
export class FakeTunnel {
  readonly frames: TunnelFrame[] = [];
  readonly openedAt = Date.now();
  closedAt: number | undefined;
  closeCode: number | undefined;
  readonly closed: Promise<number>;
  #next = 0;
  readonly #answers = new Map<string, (r: TunnelResponse) => void>();
  /** When false the server ignores the agent's pings (a dead server, as the agent sees it). */
  answerPings = true;

  constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => {
      ws.once('close', (code: number) => {
        this.closedAt = Date.now();
        this.closeCode = code;
        resolve(code);
      });
    });
    ws.on('message', (data: Buffer) => {
      const frame = decodeTunnelFrame(data.toString());
      if (!frame) throw new Error(`agent sent a malformed frame: ${data.toString()}`);
      this.frames.push(frame);
      if ('type' in frame) {
        if (frame.type === 'ping' && this.answerPings) ws.send(JSON.stringify({ type: 'pong' }));
        return;
      }
      if ('method' in frame) return;
      this.#answers.get(frame.id)?.(frame);
    });
  }

  /** Sends a request frame; resolves with the agent's answer. */
  request(method: string, params: Record<string, unknown> = {}, deadlineMs = 5_000): Promise<TunnelResponse> {
    const id = `r${++this.#next}`;
    return new Promise((resolve) => {
      this.#answers.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method, params, deadline_ms: deadlineMs }));
    });
  }

  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  count(type: 'ping' | 'pong'): number {
    return this.frames.filter((f) => 'type' in f && f.type === type).length;
  }
}

/** A WebSocket server that records what the tunnel client does; `refuse` answers upgrades with a status. */
export class FakeTunnelServer {
  readonly tunnels: FakeTunnel[] = [];
  readonly tokens: string[] = [];
  /** Upgrades to refuse (with this status) before accepting. */
  refuse: number[] = [];
  readonly #wss: WebSocketServer;
  #onTunnel: ((t: FakeTunnel) => void)[] = [];

  private constructor(wss: WebSocketServer) {
    this.#wss = wss;
    wss.on('connection', (ws) => {
      const t = new FakeTunnel(ws);
      this.tunnels.push(t);
      const waiting = this.#onTunnel;
      this.#onTunnel = [];
      for (const w of waiting) w(t);
    });
  }

  static async start(): Promise<FakeTunnelServer> {
    let server: FakeTunnelServer | undefined;
    const wss = new WebSocketServer({
      port: 0,
      host: '127.0.0.1',
      verifyClient: (info, cb) => {
        server?.tokens.push(info.req.headers.authorization ?? '');
        const status = server?.refuse.shift();
        if (status !== undefined) cb(false, status);
        else cb(true);
      },
    });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    server = new FakeTunnelServer(wss);
    return server;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#wss.address() as AddressInfo).port}`;
  }

  /** The n-th tunnel (0-based), once it is open. */
  async tunnel(n: number): Promise<FakeTunnel> {
    for (;;) {
      const t = this.tunnels[n];
      if (t) return t;
      await new Promise<FakeTunnel>((resolve) => this.#onTunnel.push(resolve));
    }
  }

  close(): Promise<void> {
    for (const c of this.#wss.clients) c.terminate();
    return new Promise((resolve) => this.#wss.close(() => resolve()));
  }
}
