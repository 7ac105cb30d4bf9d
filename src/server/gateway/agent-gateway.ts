import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import {
  TUNNEL_CLOSE_CODES,
  TUNNEL_PING_INTERVAL_MS,
  type TunnelStatusAck,
  type TunnelStatusFrame,
} from '../../protocol/index.js';
import type { SignalBus } from '../bus/index.js';
import type { Settings } from '../config/settings.js';
import type { Database } from '../db/index.js';
import { shuttingDown } from '../errors.js';
import type { RouteModule } from '../http/context.js';
import type { Metrics } from '../metrics.js';
import { listReplicas } from '../replicas/index.js';
import { MemoryAgentRegistry, type AgentRegistry } from './agent-registry.js';
import { AgentAnnouncer } from './agent-announcer.js';
import { AgentWaiters } from './agent-waiters.js';
import { Forwarder } from './forwarder.js';
import { GatewayMetrics } from './gateway-metrics.js';
import { PrivateListener } from './private-listener.js';
import type { ConnectionLimiter } from '../http/connection-limits.js';
import { privateKey } from '../access/index.js';
import { RedisAgentRegistry } from './redis-agent-registry.js';
import { ClusterAgentRegistry } from './cluster-agent-registry.js';
import { rpcRoutes } from './rpc-route.js';
import { RpcRouter } from './rpc-router.js';
import { ServerTunnel, type ServerTunnelShared } from './server-tunnel.js';
import { attachTunnelEndpoint } from './tunnel-endpoint.js';
import type { StreamOwner } from '../streams/index.js';
import { sleep } from '../../util/sleep.js';
import { TunnelTable, type TunnelChange } from './tunnel-table.js';

/** Limits and intervals; the defaults suit production, tests shorten them. */
export interface GatewayTuning {
  /** Server → agent ping interval; a tunnel silent for a whole interval is cut. */
  pingIntervalMs: number;
  /** Unanswered requests per tunnel; past it a request takes another tunnel, or gets 429. */
  maxPendingPerTunnel: number;
  /** Tunnels one device may hold on one replica; another closes the oldest. */
  maxTunnelsPerDevice: number;
  /** How long past `deadline_ms` an agent's answer is awaited. */
  answerGraceMs: number;
  /** How long past the answer deadline another replica's answer is awaited. */
  forwardGraceMs: number;
  /** Lifetime of a registry entry (default: the replica lease TTL). */
  registryTtlMs: number;
  /** Re-lookup of devices with parked requests, in case a signal was lost (default: the safety check interval). */
  recheckMs: number;
  /** On shutdown, how long requests in flight on the tunnels may finish before the tunnels close. */
  shutdownDrainMs: number;
  /** Least time between two rounds announcing the tunnels opened here to other replicas (see AgentAnnouncer). */
  announceSpacingMs: number;
}

export interface AgentGatewayOptions {
  settings: Settings;
  db: Database;
  bus: SignalBus;
  metrics: Metrics;
  /** The server's connection limiter; the private listener's connections count toward its total. */
  connections: ConnectionLimiter;
  /** Opens the tunnels as streams, and ends them on revocation and shutdown. */
  streams: StreamOwner;
  logger: Logger;
  /** This replica's id (the replicas table's); default a random UUID. */
  replicaId?: string;
  /** Presence of tunnels and status frames (the fleet module); without it tunnels count for nothing and status frames get `unavailable`. */
  fleet?: GatewayFleetHooks;
  tuning?: Partial<GatewayTuning>;
}

/** What the gateway tells the fleet module. */
export interface GatewayFleetHooks {
  presence: { add(deviceId: string, orgId: string): void; remove(deviceId: string): void };
  /** Records a tunnel status frame and calls `reply` at most once with its ack (see Fleet.tunnelStatus). */
  tunnelStatus(device: { deviceId: string; orgId: string }, frame: TunnelStatusFrame, reply: (ack: TunnelStatusAck) => void): void;
}

/** Counters for tests and diagnostics. */
export interface GatewayStats {
  /** Tunnels open on this replica. */
  tunnels: number;
  /** Requests waiting for their agent to connect. */
  parked: number;
  /** Devices with requests in progress (one bus subscription each). */
  devices: number;
  /** Agent registry reads so far. */
  registryReads: number;
}

function urlHost(host: string): string {
  const h = host === '0.0.0.0' || host === '::' ? hostname() : host;
  return h.includes(':') ? `[${h}]` : h;
}

/**
 * The agent gateway of one replica: the tunnel endpoint and table, the
 * agent registry, the request router with its waiters, and the private
 * listener other replicas forward through. Built before the replica
 * registers itself (its private URL goes into the replicas table); routes
 * attach with `routes()`; `shutdown()` before the HTTP server closes.
 */
export class AgentGateway {
  readonly replicaId: string;
  readonly tunnels: TunnelTable;
  readonly waiters: AgentWaiters;
  readonly router: RpcRouter;
  readonly metrics: GatewayMetrics;
  #privateUrl: string | undefined;
  #listener: PrivateListener | undefined;
  #detach: (() => void) | undefined;
  #closing = false;
  #privateUpgrade: ((req: IncomingMessage, socket: Duplex, head: Buffer) => boolean) | undefined;
  #shutdown: Promise<void> | undefined;
  #drain: Promise<void> | undefined;
  readonly #registry: AgentRegistry;
  readonly #announcer: AgentAnnouncer;
  readonly #tuning: GatewayTuning;
  /** What every tunnel shares (limits, the status recorder, the logger). */
  readonly #tunnelShared: ServerTunnelShared;
  readonly #pinger: NodeJS.Timeout;
  readonly #logger: Logger;

  private constructor(private readonly options: AgentGatewayOptions) {
    const { settings, logger } = options;
    this.#logger = logger;
    this.replicaId = options.replicaId ?? randomUUID();
    this.#tuning = {
      pingIntervalMs: TUNNEL_PING_INTERVAL_MS,
      maxPendingPerTunnel: 1024,
      maxTunnelsPerDevice: 8,
      answerGraceMs: 2_000,
      forwardGraceMs: 5_000,
      registryTtlMs: settings.replicaLeaseTtl * 1000,
      recheckMs: settings.safetyCheckInterval * 1000,
      shutdownDrainMs: 5_000,
      // As often as presence and statuses are written (the status batcher's interval).
      announceSpacingMs: 250,
      ...options.tuning,
    };
    const fleet = options.fleet;
    this.#tunnelShared = {
      maxPending: this.#tuning.maxPendingPerTunnel,
      answerGraceMs: this.#tuning.answerGraceMs,
      ...(fleet ? { onStatus: (t: ServerTunnel, frame: TunnelStatusFrame, reply: (ack: TunnelStatusAck) => void) => fleet.tunnelStatus(t.device, frame, reply) } : {}),
      logger,
    };
    this.metrics = new GatewayMetrics(options.metrics.registry);
    this.tunnels = new TunnelTable(this.#tuning.maxTunnelsPerDevice, (c) => this.onTunnelChange(c));
    const connected = (d: string): boolean => this.tunnels.has(d);
    const onRead = (): void => this.metrics.registryReads.inc();
    this.#registry = settings.redisUrl
      ? new RedisAgentRegistry({
          url: settings.redisUrl,
          replicaId: this.replicaId,
          ttlMs: this.#tuning.registryTtlMs,
          connected,
          devices: () => this.tunnels.devices(),
          onRead,
          logger: logger.child({ component: 'agent-registry' }),
        })
      : cluster.isWorker && settings.workers > 1
        ? new ClusterAgentRegistry({ replicaId: this.replicaId, connected, onRead, logger: logger.child({ component: 'agent-registry' }) })
        : new MemoryAgentRegistry(this.replicaId, connected, onRead);
    this.#announcer = new AgentAnnouncer({ bus: options.bus, register: (d) => this.#registry.sync(d), spacingMs: this.#tuning.announceSpacingMs });
    this.waiters = new AgentWaiters({
      replicaId: this.replicaId,
      bus: options.bus,
      registry: this.#registry,
      liveReplicas: () => listReplicas(options.db),
      hasLocal: connected,
      recheckMs: this.#tuning.recheckMs,
      metrics: this.metrics,
      logger,
    });
    const forwarder = new Forwarder({
      replicaId: this.replicaId,
      key: settings.privateSecret ? privateKey(settings.privateSecret) : undefined,
      graceMs: this.#tuning.forwardGraceMs,
      logger,
    });
    this.router = new RpcRouter(this.tunnels, this.waiters, forwarder, this.metrics, logger);
    this.#pinger = setInterval(() => {
      for (const t of this.tunnels.all()) t.heartbeat();
    }, this.#tuning.pingIntervalMs);
    this.#pinger.unref();
  }

  /** Connects the registry (Redis: rejects if unreachable) and starts the private listener (`--private-port`). */
  static async start(options: AgentGatewayOptions): Promise<AgentGateway> {
    const gateway = new AgentGateway(options);
    try {
      await gateway.#registry.start();
      await gateway.startPrivate();
    } catch (err) {
      await gateway.shutdown();
      throw err;
    }
    return gateway;
  }

  /** The URL other replicas reach this one at (goes into the replicas table); undefined without one. */
  get privateUrl(): string | undefined {
    return this.#privateUrl;
  }

  /**
   * Hands the private listener's WebSocket upgrades to `handler` (the
   * relay's links); it returns false for a path it doesn't take, which is
   * then refused with 404. Without one, every upgrade is refused.
   */
  handlePrivateUpgrades(handler: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean): void {
    this.#privateUpgrade = handler;
  }

  stats(): GatewayStats {
    return {
      tunnels: this.tunnels.size,
      parked: this.waiters.parked,
      devices: this.waiters.devices,
      registryReads: this.#registry.reads,
    };
  }

  /** The rpc route, and the tunnel endpoint on the app's HTTP server. */
  routes(): RouteModule {
    const closing = (): boolean => this.#closing;
    const rpc = rpcRoutes(this.router, closing);
    return {
      register: (app, ctx) => {
        rpc.register(app, ctx);
        this.#detach = attachTunnelEndpoint(app.server, {
          authorize: (headers) => ctx.access.authorizeTunnel(headers),
          closing,
          maxPayloadBytes: ctx.settings.bodyLimit,
          upgrade: (req, socket, head, wss, device) =>
            this.options.streams.upgrade(wss, req, socket, head, (ws) => {
              if (this.#closing) {
                ws.close(1012, 'server shutting down');
                return undefined;
              }
              const tunnel = new ServerTunnel(ws, { deviceId: device.deviceId, orgId: device.orgId, tokenId: device.tokenId }, this.#tunnelShared);
              this.tunnels.add(tunnel);
              return tunnel;
            }),
          logger: this.#logger,
        });
      },
    };
  }

  /**
   * The first step of a shutdown: refuses new tunnels and requests, fails
   * parked requests (503), and lets requests in flight finish for up to
   * `shutdownDrainMs`. The stream owner then closes the tunnels (1012:
   * agents reconnect elsewhere). Idempotent.
   */
  drain(): Promise<void> {
    this.#drain ??= this.drainRequests();
    return this.#drain;
  }

  private async drainRequests(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#pinger);
    this.waiters.close(shuttingDown());
    const until = Date.now() + this.#tuning.shutdownDrainMs;
    while (this.tunnels.all().some((t) => t.pending > 0) && Date.now() < until) {
      await sleep(20);
    }
  }

  /**
   * After `drain` and the stream owner's shutdown: stops the private
   * listener and removes this replica's registry entries. Idempotent.
   */
  shutdown(): Promise<void> {
    this.#shutdown ??= this.stop();
    return this.#shutdown;
  }

  private async stop(): Promise<void> {
    await this.drain();
    this.#detach?.();
    await this.#listener?.close();
    this.#announcer.close();
    await this.#registry.stop();
  }

  private async startPrivate(): Promise<void> {
    const { settings, logger } = this.options;
    if (settings.privatePort === undefined) {
      this.#privateUrl = settings.advertisePrivateUrl;
      return;
    }
    if (!settings.privateSecret) throw new Error('--private-port needs --private-secret');
    // Cluster workers are replicas of their own: each needs a port of its own.
    const worker = cluster.isWorker && settings.workers > 1;
    if (worker && settings.advertisePrivateUrl) logger.warn('--advertise-private-url is ignored with --workers: each worker advertises its own port');
    this.#listener = await PrivateListener.start({
      host: settings.privateHost,
      port: worker ? 0 : settings.privatePort,
      exclusive: worker,
      key: privateKey(settings.privateSecret),
      bodyLimit: settings.bodyLimit,
      bodyTimeoutMs: settings.bodyTimeout * 1000,
      connections: this.options.connections,
      deliver: (deviceId, method, params, answerMs, signal) => this.router.deliverLocal({ deviceId, method, params, answerMs, signal }),
      closing: () => this.#closing,
      upgrade: (req, socket, head) => this.#privateUpgrade?.(req, socket, head) ?? false,
      metrics: this.metrics,
      logger: logger.child({ component: 'private-listener' }),
    });
    this.#privateUrl = (!worker && settings.advertisePrivateUrl) || `http://${urlHost(settings.privateHost)}:${this.#listener.port}`;
  }

  private onTunnelChange(change: TunnelChange): void {
    const { tunnel, type } = change;
    if (type === 'opened') this.options.fleet?.presence.add(tunnel.deviceId, tunnel.orgId);
    else {
      this.options.fleet?.presence.remove(tunnel.deviceId);
      this.options.streams.release(tunnel);
    }
    this.metrics.tunnelsOpen.set(this.tunnels.size);
    this.#logger.info({ device: tunnel.deviceId, tunnel: tunnel.id, event: type, tunnels: this.tunnels.size }, `agent tunnel ${type}`);
    // A closed tunnel leaves the registry at once: other replicas stop routing to it.
    if (type === 'opened') this.#announcer.opened(tunnel.deviceId);
    else void this.#registry.sync(tunnel.deviceId);
  }
}
