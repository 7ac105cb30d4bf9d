import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { decodeTunnelFrame, type TunnelFrame, type TunnelResponse, type TunnelStatusFrame } from '../../src/protocol/index.js';

/** How a fake tunnel answers a status frame: the frame to send back, or undefined to ignore it (an older server). */
export type StatusAnswer = (frame: TunnelStatusFrame) => unknown;

/** Acknowledges every status frame. */
export const ackStatus: StatusAnswer = (f) => ({ type: 'status_ack', seq: f.seq });

/** Records every status frame, as the server does: an ack for frames that ask for one, nothing for those that ask only for errors. */
export const ackAsAsked: StatusAnswer = (f) => (f.ack === 'errors' ? undefined : { type: 'status_ack', seq: f.seq });

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
  /** WebSocket pings (control frames) the agent sent. */
  wsPings = 0;

  constructor(
    readonly ws: WebSocket,
    /** Answers status frames; undefined ignores them. */
    public answerStatus: StatusAnswer | undefined = undefined,
  ) {
    this.closed = new Promise((resolve) => {
      ws.once('close', (code: number) => {
        this.closedAt = Date.now();
        this.closeCode = code;
        resolve(code);
      });
    });
    // The server answers pings by hand (the WebSocketServer's autoPong is off), so a dead one can be played.
    ws.on('ping', () => {
      this.wsPings++;
      if (this.answerPings) ws.pong();
    });
    ws.on('message', (data: Buffer) => {
      const frame = decodeTunnelFrame(data.toString());
      if (!frame) throw new Error(`agent sent a malformed frame: ${data.toString()}`);
      this.frames.push(frame);
      if ('type' in frame) {
        if (frame.type === 'ping' && this.answerPings) ws.send(JSON.stringify({ type: 'pong' }));
        if (frame.type === 'status') {
          const answer = this.answerStatus?.(frame);
          if (answer !== undefined) ws.send(JSON.stringify(answer));
        }
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

  count(type: 'ping' | 'pong' | 'status'): number {
    return this.frames.filter((f) => 'type' in f && f.type === type).length;
  }

  /** The status frames the agent sent on this tunnel, in order. */
  statuses(): TunnelStatusFrame[] {
    return this.frames.filter((f): f is TunnelStatusFrame => 'type' in f && f.type === 'status');
  }
}

/** A WebSocket server that records what the tunnel client does; `refuse` answers upgrades with a status. */
export class FakeTunnelServer {
  readonly tunnels: FakeTunnel[] = [];
  readonly tokens: string[] = [];
  /** Upgrades to refuse (with this status, or status and headers) before accepting. */
  refuse: Array<number | { status: number; headers: Record<string, string> }> = [];
  /** How new tunnels answer status frames (see StatusAnswer); default: ignored. */
  answerStatus: StatusAnswer | undefined;
  readonly #wss: WebSocketServer;
  #onTunnel: ((t: FakeTunnel) => void)[] = [];

  private constructor(wss: WebSocketServer) {
    this.#wss = wss;
    wss.on('connection', (ws) => {
      const t = new FakeTunnel(ws, this.answerStatus);
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
      autoPong: false,
      verifyClient: (info, cb) => {
        server?.tokens.push(info.req.headers.authorization ?? '');
        const refusal = server?.refuse.shift();
        if (typeof refusal === 'number') cb(false, refusal);
        else if (refusal !== undefined) cb(false, refusal.status, 'refused', refusal.headers);
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
