/**
 * The agent's relay session (docs/protocol.md "Relays"): follows the relay
 * list, keeps one WebSocket to one relay, and moves to another the moment
 * it closes. Packets go through RelayProxies.
 */
import type { Logger } from 'pino';
import WebSocket, { type ClientOptions } from 'ws';
import type { FleetplaneClient } from '../../client/index.js';
import {
  bearerAuthorization,
  HEADERS,
  RELAY_CLOSE_CODES,
  RELAY_MAX_MESSAGE_BYTES,
  RELAY_SESSION_BUFFER_BYTES,
  ROUTES,
  TUNNEL_PING_INTERVAL_MS,
  type RelayEntry,
} from '../../protocol/index.js';
import { equalJitterDelay } from '../../util/backoff.js';
import { sleep } from '../../util/sleep.js';
import { Wakeup } from '../wakeup.js';
import { RelayProxies } from './relay-proxies.js';
import { checkRelayList } from '../received/index.js';

export interface RelayClientOptions {
  client: FleetplaneClient;
  /** The agent's server (what an entry with `url: null` means). */
  server: string;
  token: () => string;
  wsOptions?: ClientOptions | undefined;
  wireguardPort: () => number;
  logger: Logger;
  /** Told when the session opens or closes (the path manager re-judges relayed peers). */
  onChange?: () => void;
  random?: () => number;
}

/** How long a relay whose session failed is passed over while others exist. */
const FAILED_RELAY_PAUSE_MS = 30_000;
const HANDSHAKE_TIMEOUT_MS = 5_000;

/** `http://h:p/x` → `ws://h:p/x/api/relay`. */
export function relaySessionUrl(base: string): string {
  const u = new URL(base);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  u.pathname = `${u.pathname.replace(/\/+$/, '')}${ROUTES.relay}`;
  return u.toString();
}

/**
 * Contract: `run(signal)` never gives up before the signal aborts: the list
 * is followed across failures, and a closed session is replaced at once by
 * one to another relay (the same when it is the only one), with backoff
 * between failed rounds. Until the first list arrives the agent's own
 * server is the relay. `connected` and `relayId` describe the session now.
 */
export class RelayClient {
  readonly proxies: RelayProxies;
  #entries: readonly RelayEntry[] = [];
  #ws: WebSocket | undefined;
  #relayId: string | null = null;
  readonly #failedAt = new Map<string, number>();
  readonly #listChanged = new Wakeup();

  constructor(private readonly options: RelayClientOptions) {
    this.proxies = new RelayProxies({
      wireguardPort: options.wireguardPort,
      send: (message) => this.#send(message),
      logger: options.logger,
    });
  }

  get connected(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  /** The replica holding the session, when known. */
  get relayId(): string | null {
    return this.connected ? this.#relayId : null;
  }

  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.#followList(signal), this.#sessions(signal)]);
    this.proxies.close();
  }

  #send(message: Buffer): boolean {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN || ws.bufferedAmount > RELAY_SESSION_BUFFER_BYTES) return false;
    ws.send(message, { binary: true });
    return true;
  }

  async #followList(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        for await (const received of this.options.client.relays.watch({ signal, idleTimeoutMs: 3 * 15_000 })) {
          failures = 0;
          const list = checkRelayList(received);
          if (!list.ok) {
            // The last valid list stays in use; the next one (at least every bookmark interval) may be valid.
            this.options.logger.error({ problem: list.problem }, 'the server sent an invalid relay list; keeping the last valid one');
            continue;
          }
          this.#entries = list.value.items;
          this.#listChanged.fire();
        }
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        this.options.logger.warn({ err, failures }, 'following the relay list failed; retrying');
      }
      if (signal.aborted) return;
      await sleep(equalJitterDelay(Math.max(failures, 1), 1_000, 30_000, this.options.random), signal);
    }
  }

  /** The entry to use next: one with `url: null` (the agent's server), else one at random among those not failed lately. */
  #pick(): { id: string | null; url: string } {
    const now = Date.now();
    const entries = this.#entries;
    const own = entries.find((e) => e.url === null);
    if (entries.length === 0 || own) return { id: own?.id ?? null, url: this.options.server };
    const fresh = entries.filter((e) => now - (this.#failedAt.get(e.id) ?? -Infinity) > FAILED_RELAY_PAUSE_MS);
    const pool = fresh.length > 0 ? fresh : entries;
    const entry = pool[Math.floor((this.options.random ?? Math.random)() * pool.length)] ?? pool[0];
    return entry ? { id: entry.id, url: entry.url ?? this.options.server } : { id: null, url: this.options.server };
  }

  async #sessions(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      const target = this.#pick();
      const opened = Date.now();
      const outcome = await this.#session(target, signal);
      if (signal.aborted) return;
      if (target.id !== null) this.#failedAt.set(target.id, Date.now());
      // A session that lasted is not a failure: the next one starts at once (another relay).
      failures = outcome.opened && Date.now() - opened > 10_000 ? 0 : failures + 1;
      const revoked = outcome.code === RELAY_CLOSE_CODES.revoked;
      const delay = failures <= 1 && !revoked ? 0 : equalJitterDelay(failures, 500, 8_000, this.options.random);
      this.options.logger.info({ relay: target.url, code: outcome.code, failures, delay_ms: delay }, 'relay session ended');
      // A new list may hold the relay that works: it ends the wait.
      if (delay > 0) await this.#listChanged.wait(signal, delay);
    }
  }

  /** One session, from connecting to its close. */
  #session(target: { id: string | null; url: string }, signal: AbortSignal): Promise<{ opened: boolean; code: number }> {
    const ws = new WebSocket(relaySessionUrl(target.url), {
      ...this.options.wsOptions,
      headers: { ...this.options.wsOptions?.headers, [HEADERS.authorization]: bearerAuthorization(this.options.token()) },
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      maxPayload: RELAY_MAX_MESSAGE_BYTES,
      // Masking protects proxies that cache from forged requests; relay messages are WireGuard's, already
      // encrypted, and masking every byte (and copying each message for it) was a quarter of a relaying agent's CPU.
      generateMask: (mask: Buffer) => void mask.fill(0),
    });
    let opened = false;
    let heard = Date.now();
    return new Promise((resolve) => {
      const ping = setInterval(() => {
        const silent = Date.now() - heard;
        if (silent > 2 * TUNNEL_PING_INTERVAL_MS) ws.terminate();
        else if (silent > TUNNEL_PING_INTERVAL_MS) ws.ping();
      }, TUNNEL_PING_INTERVAL_MS);
      ping.unref();
      const onAbort = (): void => ws.close(1001);
      signal.addEventListener('abort', onAbort, { once: true });
      ws.on('upgrade', (res) => {
        const replica = res.headers[HEADERS.replica];
        this.#relayId = typeof replica === 'string' ? replica : target.id;
      });
      ws.on('open', () => {
        opened = true;
        this.#ws = ws;
        this.options.logger.info({ relay: target.url, replica: this.#relayId }, 'relay session open');
        this.options.onChange?.();
      });
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        heard = Date.now();
        if (isBinary) this.proxies.deliver(data);
      });
      ws.on('ping', () => (heard = Date.now()));
      ws.on('pong', () => (heard = Date.now()));
      ws.on('unexpected-response', (req, res) => {
        this.options.logger.warn({ relay: target.url, status: res.statusCode }, 'relay refused the session');
        res.resume();
        req.destroy();
      });
      ws.on('error', (err) => this.options.logger.debug({ err, relay: target.url }, 'relay socket error'));
      ws.on('close', (code) => {
        clearInterval(ping);
        signal.removeEventListener('abort', onAbort);
        if (this.#ws === ws) {
          this.#ws = undefined;
          this.options.onChange?.();
        }
        resolve({ opened, code });
      });
    });
  }
}
