import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { HEADERS, QUERY, RELAY_KEY_BYTES, RELAY_LIST_EVENT, bearerAuthorization, paths, type EnrolledDevice } from '../../src/protocol/index.js';
import { eventually, http, wsUpgradeStatus } from '../gateway/support.js';

/** A device enrolled with a WireGuard key the test knows. */
export interface KeyedDevice {
  id: string;
  token: string;
  /** Its public key, base64. */
  key: string;
}

/** Enrolls a device with a fresh key through `registrationKey`. */
export async function enrollKeyed(base: string, org: string, registrationKey: string): Promise<KeyedDevice> {
  const key = randomBytes(RELAY_KEY_BYTES).toString('base64');
  const res = await http(base, 'POST', paths.devices(org), registrationKey, { hostname: `relay-${randomBytes(4).toString('hex')}`, public_key: key });
  if (res.status !== 201) throw new Error(`enroll: ${res.status} ${JSON.stringify(res.body)}`);
  const d = res.body as EnrolledDevice;
  return { id: d.id, token: d.device_token, key };
}

/** `key (32) | record+`, each record `uint16 BE length | packet`. */
export function relayMessage(key: string, packets: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [Buffer.from(key, 'base64')];
  for (const p of packets) {
    const len = Buffer.alloc(2);
    len.writeUInt16BE(p.length);
    parts.push(len, p);
  }
  return Buffer.concat(parts);
}

/** A message the relay sent: its key (the source) and its packets. */
export interface Relayed {
  key: string;
  packets: Buffer[];
}

export function parseRelayed(buf: Buffer): Relayed {
  const key = buf.subarray(0, RELAY_KEY_BYTES).toString('base64');
  const packets: Buffer[] = [];
  let at = RELAY_KEY_BYTES;
  while (at < buf.length) {
    const len = buf.readUInt16BE(at);
    packets.push(Buffer.from(buf.subarray(at + 2, at + 2 + len)));
    at += 2 + len;
  }
  return { key, packets };
}

export function relayUrl(base: string): string {
  return `${base.replace(/^http/, 'ws')}${paths.relay()}`;
}

/** A device's relay session, as a test drives it: what it received, and how it closed. */
export class RelayPeer {
  readonly received: Relayed[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #closeCode: number | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.received.push(parseRelayed(data));
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code: number, reason: Buffer) => {
        this.#closeCode = code;
        resolve({ code, reason: reason.toString() });
      }),
    );
  }

  /** Opens a session with `token`; rejects with the HTTP status when the upgrade is refused. */
  static connect(base: string, token: string): Promise<RelayPeer> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(relayUrl(base), { headers: { [HEADERS.authorization]: bearerAuthorization(token) } });
      const peer = new RelayPeer(ws);
      ws.once('open', () => resolve(peer));
      ws.once('unexpected-response', (req, res) => {
        req.destroy();
        reject(new Error(`relay upgrade refused: ${res.statusCode ?? 0}`));
      });
      ws.once('error', reject);
    });
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN && this.#closeCode === undefined;
  }

  send(dstKey: string, packets: readonly Buffer[]): void {
    this.ws.send(relayMessage(dstKey, packets), { binary: true });
  }

  /** The packets received from `srcKey` so far. */
  from(srcKey: string): Buffer[] {
    return this.received.filter((r) => r.key === srcKey).flatMap((r) => r.packets);
  }

  /** Sends `packet` to `dstKey` every 50 ms until `to` received it from this peer's key (WireGuard retries likewise). */
  async sendUntilReceived(to: RelayPeer, myKey: string, dstKey: string, packet: Buffer, timeoutMs = 15_000): Promise<void> {
    const has = (): boolean => to.from(myKey).some((p) => p.equals(packet));
    await eventually(
      `${dstKey.slice(0, 8)}… receives a packet from ${myKey.slice(0, 8)}…`,
      async () => {
        if (has()) return true;
        if (this.open) this.send(dstKey, [packet]);
        await new Promise((r) => setTimeout(r, 50));
        return has();
      },
      timeoutMs,
    );
  }

  /** The close code, once the session closed; fails after `timeoutMs` (a session that should close but doesn't fails fast). */
  async closeCode(timeoutMs = 10_000): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the relay session did not close within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return (await Promise.race([this.closed, late])).code;
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
  }
}

/** The HTTP status a relay upgrade with `token` gets (101 when it opened). */
export function upgradeStatus(base: string, token: string | undefined): Promise<number> {
  return wsUpgradeStatus(relayUrl(base), token);
}

/** A distinct packet for each call: WireGuard's are never alike either. */
export function packet(label: string): Buffer {
  return Buffer.concat([Buffer.from(`${label}:`), randomBytes(24)]);
}

/** One line of a relay list stream, parsed. */
export interface RelayListLine {
  type: string;
  value: { items?: { id: string; url: string | null; expires_at: string }[]; code?: string };
}

/** A `GET /api/relays?watch=true` stream: its lines as they arrive. */
export class RelayListWatch {
  readonly lines: RelayListLine[] = [];
  readonly ended: Promise<void>;
  /** True once the stream ended (its last line read, or the connection gone). */
  done = false;
  contentType = '';
  readonly #abort = new AbortController();

  constructor(base: string, token: string) {
    this.ended = this.#run(base, token)
      .catch(() => undefined)
      .finally(() => {
        this.done = true;
      });
  }

  async #run(base: string, token: string): Promise<void> {
    const res = await fetch(`${base}${paths.relays()}?${QUERY.watch}=true`, {
      headers: { [HEADERS.authorization]: bearerAuthorization(token) },
      signal: this.#abort.signal,
    });
    this.contentType = res.headers.get(HEADERS.contentType) ?? '';
    if (!res.body) return;
    const decoder = new TextDecoder();
    let pending = '';
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      pending += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (line.trim() !== '') this.lines.push(JSON.parse(line) as RelayListLine);
      }
    }
  }

  /** The ids in the latest `relays` line. */
  latestIds(): string[] {
    const last = [...this.lines].reverse().find((l) => l.type === RELAY_LIST_EVENT);
    return last?.value.items?.map((i) => i.id) ?? [];
  }

  close(): void {
    this.#abort.abort();
  }
}
