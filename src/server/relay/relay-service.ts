import cluster from 'node:cluster';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { WebSocket } from 'ws';
import { HEADERS, REDIS_KEYS, RELAY_MAX_MESSAGE_BYTES, ROUTES, TUNNEL_PING_INTERVAL_MS, type RelayList } from '../../protocol/index.js';
import { privateKey, type Access } from '../access/index.js';
import type { Settings } from '../config/settings.js';
import { ApiError } from '../errors.js';
import {
  AgentAnnouncer,
  attachTunnelEndpoint,
  CLUSTER_REGISTRIES,
  ClusterAgentRegistry,
  RedisAgentRegistry,
  type AgentGateway,
  type AgentRegistry,
} from '../gateway/index.js';
import type { RouteModule } from '../http/context.js';
import type { ReplicaInfo } from '../replicas/index.js';
import type { Store } from '../store/index.js';
import type { StreamOwner } from '../streams/index.js';
import { keyBytes, orgIdBytes, splitSessionId } from './relay-frames.js';
import { relayListOf } from './relay-list.js';
import { RelayListStreams } from './relay-list-streams.js';
import { RelayLinks } from './relay-links.js';
import { RelayLocations } from './relay-locations.js';
import { RelayMetrics } from './relay-metrics.js';
import { relayRoutes } from './relay-routes.js';
import { RelayRouter, type RelayRemote } from './relay-router.js';
import { RelaySession, type RelayDevice, type RelaySessionHooks } from './relay-session.js';
import { ReplicaDirectory } from './replica-directory.js';
import { SessionTable } from './session-table.js';

/** Bytes a relay list stream may have unsent before it is cut (a line is well under 1 KiB per replica). */
const LIST_STREAM_BUFFER_BYTES = 256 * 1024;
/** How old the list of live replicas may be when the relay looks a replica up. */
const DIRECTORY_MAX_AGE_MS = 1_000;

export interface RelayServiceOptions {
  settings: Settings;
  /** The live replicas (the `replicas` table): the relay list and the other replicas' private URLs. */
  replicas: () => Promise<ReplicaInfo[]>;
  /** Holds sessions, links and list streams, and ends them on revocation and shutdown. */
  streams: StreamOwner;
  /** This replica's id, and its private listener, where other replicas' links arrive. */
  gateway: AgentGateway;
  registry: Registry;
  logger: Logger;
  /** Keepalive rounds of sessions and links (default TUNNEL_PING_INTERVAL_MS). */
  pingIntervalMs?: number;
}

/** Counters for tests and diagnostics. */
export interface RelayStats {
  sessions: number;
  links: number;
  /** Whether packets reach sessions on other replicas (Redis or workers, and a private secret). */
  acrossReplicas: boolean;
}

/**
 * The relay of one replica (docs/protocol.md "Relays"): devices' sessions
 * (`GET /api/relay`, through the stream owner), routing between them, the
 * relay registry and the links to other replicas when there are others
 * (Redis, or the primary's directory under `--workers`, with a private
 * secret to sign links), and the relay list with its streams. Built after
 * the gateway (its private listener takes the links); routes attach with
 * `routes()`; `drain()` as shutdown begins, `shutdown()` once the stream
 * owner ended the streams.
 */
export class RelayService {
  readonly replicaId: string;
  readonly sessions = new SessionTable();
  readonly metrics: RelayMetrics;
  readonly router: RelayRouter;
  readonly #lists: RelayListStreams;
  readonly #registry: AgentRegistry | undefined;
  readonly #announcer: AgentAnnouncer | undefined;
  readonly #links: RelayLinks | undefined;
  readonly #hooks: RelaySessionHooks;
  readonly #pinger: NodeJS.Timeout;
  readonly #logger: Logger;
  #detach: (() => void) | undefined;
  #closing = false;
  #stopped: Promise<void> | undefined;

  private constructor(private readonly o: RelayServiceOptions) {
    const { settings, logger } = o;
    this.#logger = logger;
    this.replicaId = o.gateway.replicaId;
    this.metrics = new RelayMetrics(o.registry);
    const secret = settings.privateSecret;
    const shared = settings.relay && (settings.redisUrl !== undefined || (cluster.isWorker && settings.workers > 1));
    if (shared && !secret) {
      logger.warn('the relay reaches sessions on other replicas only with the private listener and its secret (--private-port, --private-secret): relaying between sessions on this replica only');
    }
    // One process, or no way to reach the others: the session table is the whole registry.
    this.#registry = shared && secret ? this.#makeRegistry() : undefined;
    let remote: RelayRemote | undefined;
    if (this.#registry && secret) {
      const directory = new ReplicaDirectory(o.replicas, DIRECTORY_MAX_AGE_MS);
      const locations = new RelayLocations({ replicaId: this.replicaId, registry: this.#registry, directory });
      const links = new RelayLinks({
        replicaId: this.replicaId,
        key: privateKey(secret),
        privateUrlOf: (id) => directory.privateUrlOf(id),
        received: (m) => this.router.fromLink(m),
        lost: (peer) => {
          locations.forgetReplica(peer);
          directory.invalidate();
        },
        count: (r, p, b) => this.metrics.count(r, p, b),
        changed: (open) => this.metrics.links.set(open),
        owner: o.streams,
        logger: logger.child({ component: 'relay-links' }),
      });
      o.gateway.handlePrivateUpgrades((req, socket, head) => links.accept(req, socket, head));
      this.#links = links;
      remote = { locations, links };
    }
    const registry = this.#registry;
    this.#announcer = registry ? new AgentAnnouncer({ register: (id) => registry.sync(id), spacingMs: 250 }) : undefined;
    this.router = new RelayRouter(this.sessions, this.metrics, logger, remote);
    this.#hooks = {
      received: (s, m) => this.router.fromSession(s, m),
      closed: (s) => this.#closed(s),
      logger,
    };
    this.#lists = new RelayListStreams({
      read: () => this.readList(),
      owner: o.streams,
      pollMs: (settings.replicaLeaseTtl * 1000) / 3,
      heartbeatMs: settings.bookmarkInterval * 1000,
      bufferLimit: LIST_STREAM_BUFFER_BYTES,
      logger,
    });
    this.#pinger = setInterval(() => {
      for (const s of this.sessions.all()) s.heartbeat();
      this.#links?.heartbeat();
    }, o.pingIntervalMs ?? TUNNEL_PING_INTERVAL_MS);
    this.#pinger.unref();
  }

  /** Connects the relay registry (Redis: rejects if unreachable). */
  static async start(o: RelayServiceOptions): Promise<RelayService> {
    const relay = new RelayService(o);
    try {
      await relay.#registry?.start();
    } catch (err) {
      await relay.shutdown();
      throw err;
    }
    return relay;
  }

  stats(): RelayStats {
    return { sessions: this.sessions.size, links: this.#links?.open ?? 0, acrossReplicas: this.#links !== undefined };
  }

  /** The relay list now (one query). */
  async readList(): Promise<RelayList> {
    return relayListOf(await this.o.replicas());
  }

  /** The relay list routes, and the session endpoint on the app's HTTP server (with `--relay`). */
  routes(): RouteModule {
    const enabled = this.o.settings.relay;
    const rest = relayRoutes({ enabled, read: () => this.readList(), streams: this.#lists });
    return {
      register: (app, ctx) => {
        rest.register(app, ctx);
        if (!enabled) return;
        this.#detach = attachTunnelEndpoint<RelayDevice>(app.server, {
          path: ROUTES.relay,
          authorize: (headers) => this.#authorize(ctx.access, ctx.store, headers),
          closing: () => this.#closing,
          maxPayloadBytes: RELAY_MAX_MESSAGE_BYTES,
          // The agent reports which replica relays it, also behind a load balancer.
          responseHeaders: [`${HEADERS.replica}: ${this.replicaId}`],
          upgrade: (req, socket, head, wss, device) => this.o.streams.upgrade(wss, req, socket, head, (ws) => this.#open(ws, device)),
          logger: this.#logger,
        });
      },
    };
  }

  /** The first step of a shutdown: no session opens any more (the stream owner then ends them with 1012). */
  drain(): void {
    this.#closing = true;
  }

  /** After the stream owner's shutdown: closes the links, stops the list streams' reads, removes this replica's registry entries. Idempotent. */
  shutdown(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<void> {
    this.drain();
    clearInterval(this.#pinger);
    this.#detach?.();
    this.#lists.close();
    for (const s of [...this.sessions.all()]) s.destroy();
    this.#links?.close();
    this.#announcer?.close();
    await this.#registry?.stop();
  }

  /** The relay registry shared with the other replicas: Redis's, else the cluster primary's. */
  #makeRegistry(): AgentRegistry {
    const { settings, logger } = this.o;
    const connected = (id: string): boolean => this.sessions.has(id);
    const log = logger.child({ component: 'relay-registry' });
    if (settings.redisUrl) {
      return new RedisAgentRegistry({
        url: settings.redisUrl,
        replicaId: this.replicaId,
        key: (id) => REDIS_KEYS.relayRegistry(...splitSessionId(id)),
        label: 'relay registry',
        ttlMs: settings.replicaLeaseTtl * 1000,
        connected,
        devices: () => this.sessions.ids(),
        logger: log,
      });
    }
    return new ClusterAgentRegistry({ replicaId: this.replicaId, type: CLUSTER_REGISTRIES.relay, connected, logger: log });
  }

  /** The device of a session's upgrade: its token (401, 403 as the tunnel's), then its WireGuard key now. */
  async #authorize(access: Access, store: Store, headers: IncomingHttpHeaders): Promise<RelayDevice> {
    const p = await access.authorizeTunnel(headers, ROUTES.relay);
    const device = await store.devices.get(p.orgId, p.deviceId);
    if (!device) throw new ApiError('unauthorized', 'unknown, expired or revoked token');
    const key = keyBytes(device.public_key);
    if (!key) throw new ApiError('forbidden', "the device's public key is not a WireGuard key");
    return { ...p, publicKey: device.public_key, keyBytes: key, orgBytes: orgIdBytes(p.orgId) };
  }

  #open(ws: WebSocket, device: RelayDevice): RelaySession | undefined {
    if (this.#closing) {
      ws.close(1012, 'server shutting down');
      return undefined;
    }
    const session = new RelaySession(ws, device, this.#hooks);
    this.sessions.add(session)?.supersede();
    this.metrics.sessions.set(this.sessions.size);
    this.#announcer?.opened(session.id);
    this.#logger.info({ device: device.deviceId, org: device.orgId, sessions: this.sessions.size }, 'relay session opened');
    return session;
  }

  #closed(session: RelaySession): void {
    this.o.streams.release(session);
    if (!this.sessions.remove(session)) return;
    this.metrics.sessions.set(this.sessions.size);
    this.#logger.info({ device: session.device.deviceId, org: session.orgId, sessions: this.sessions.size }, 'relay session closed');
    // A closed session leaves the registry at once: other replicas stop sending here.
    void this.#registry?.sync(session.id);
  }
}
