import { readFile } from 'node:fs/promises';
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import pino, { type Logger } from 'pino';
import { instrument, migrate, openEmbedded, openKeptPglite, openPglite, openPostgres, type Database } from './db/index.js';
import { createBus, type BusStats, type ReliabilityOptions, type SignalBus } from './bus/index.js';
import { listReplicas, ReplicaRegistry } from './replicas/index.js';
import { replicaRoutes } from './http/routes/replicas.js';
import { Store, resolveAdminToken, type AdminToken } from './store/index.js';
import { Access, type RevocationFollower } from './access/index.js';
import { Metrics } from './metrics.js';
import { clusterMetricsSource } from './cluster-metrics.js';
import { buildApp, type App } from './http/app.js';
import { ConnectionLimiter } from './http/connection-limits.js';
import { closeAllConnections, closeHttp2Sessions } from './http/http2-sessions.js';
import { readTlsPair, ReloadableCertificate, type TlsFiles } from './http/tls-certificate.js';
import { isLoopbackHost } from '../util/loopback.js';
import type { RouteModule, ServerContext } from './http/context.js';
import { makeSettings, type Settings } from './config/settings.js';
import { runPeriodically } from '../util/periodic.js';
import { pageRoutes, WatchEngine, WatchMetrics, watchRoutes } from './watch/index.js';
import { procTcpMemory, StreamMetrics, StreamOwner, type TcpMemorySource } from './streams/index.js';
import { bindAddress, LISTEN_BACKLOG, probePort, reservePort, ReservedPort } from './http/reserved-port.js';
import { AgentGateway } from './gateway/index.js';
import { RelayService } from './relay/index.js';
import { startStunFromSettings, type StunServer } from './stun/index.js';
import { EphemeralCollector, Fleet } from './fleet/index.js';
import { loginFromSettings } from './login/index.js';
import { authRoutes } from './http/routes/auth.js';
import { userSessionRoutes } from './http/routes/user-sessions.js';
import { dashboardRoutes } from './http/dashboard.js';
import { pruneAudit } from './audit/index.js';

/** How long requests on open connections may take to finish in a stop (within the shutdown grace). */
const CLOSE_GRACE_MS = 5_000;
/** How long streams may take to get their last lines out in a stop (within the shutdown grace), before they are cut. */
const STREAM_GRACE_MS = 2_000;
/** A stop slower than this is logged as a warning: a restart's downtime is where it shows. */
const SLOW_STOP_MS = 5_000;

/** A running server. `close()` stops accepting, drains, closes the database. */
export interface FleetServer {
  readonly app: App;
  readonly ctx: ServerContext;
  readonly db: Database;
  readonly adminToken: AdminToken;
  readonly watch: WatchEngine;
  /** The owner of every long-lived stream (watch, convergence, tunnel). */
  readonly streams: StreamOwner;
  readonly bus: SignalBus;
  readonly replica: ReplicaRegistry;
  readonly gateway: AgentGateway;
  /** Relays packets between devices (`GET /api/relay`), across replicas, and serves the relay list. */
  readonly relay: RelayService;
  readonly fleet: Fleet;
  /** Follows token revocations (made on any replica) and ends what was opened with them. */
  readonly revocations: RevocationFollower;
  /** Deletes ephemeral devices offline past `--ephemeral-offline-timeout` (on the oldest replica only). */
  readonly ephemeral: EphemeralCollector;
  /**
   * Settles if the storage this server started itself (the embedded
   * PostgreSQL) exits while the server runs; never settles otherwise.
   */
  readonly storageLost: Promise<Error>;
  /** Base URL once listening (`listen: true`), else undefined; `https://` with `--tls-cert`. */
  readonly url: string | undefined;
  /** The STUN responder's bound ports once listening with `--stun` (the default), else undefined. */
  readonly stun: StunServer | undefined;
  /**
   * Reads `--tls-cert` and `--tls-key` again and serves the new certificate
   * to new connections; open ones keep theirs. False (and logged) when the
   * files are unusable (the previous certificate stays) or TLS is off.
   */
  reloadTls(): Promise<boolean>;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Listen on settings.host/port (default true). Tests using `app.inject` pass false. */
  listen?: boolean;
  logger?: Logger;
  /** A bus to use instead of building one from the settings. */
  bus?: SignalBus;
  /** Extra route modules (the agent gateway). */
  modules?: readonly RouteModule[];
  /**
   * The API port, bound already (`serve` binds it before it loads the
   * server, so a busy port fails at once); default: bound here, before the
   * storage starts.
   */
  reservedPort?: ReservedPort;
  /** The dashboard's built bundle (default: dist/dashboard of the package). */
  dashboardDir?: string;
}

/**
 * Faults and fakes only tests inject (through `startServerWithHooks`, which
 * the package does not export, and test/support/serve-with-faults.mjs for
 * processes): no setting or flag of the product reaches them.
 */
export interface ServerTestHooks {
  /** The reliable bus drivers' test hooks (e.g. `dropEvery`: discard every Nth signal, to prove loss is repaired). */
  bus?: Partial<Omit<ReliabilityOptions, 'logger'>>;
  /** Where the kernel guard reads the host's TCP memory (default /proc; tests: a host under pressure). */
  tcpMemory?: TcpMemorySource;
  /** Compile every route's schemas when the routes are registered: a schema Ajv refuses fails the start. */
  eagerValidation?: boolean;
}

interface OpenedDatabase {
  db: Database;
  /** The embedded PostgreSQL's end, when this server started one. */
  embeddedExit?: Promise<{ expected: boolean }>;
}

/** Templates read so far, by path: a process that starts many in-memory servers (a test suite) reads each once. */
const templates = new Map<string, Promise<Blob>>();

function memoryTemplate(path: string): Promise<Blob> {
  let t = templates.get(path);
  if (!t) {
    t = readFile(path).then((bytes) => new Blob([bytes]));
    templates.set(path, t);
    // A failed read is not kept: the next server tries again (and this one fails with the reason).
    t.catch(() => templates.delete(path));
  }
  return t;
}

async function openDatabase(settings: Settings, logger: Logger): Promise<OpenedDatabase> {
  const onNotice = (message: string): void => logger.debug({ message }, 'postgres notice');
  if (settings.databaseUrl) return { db: await openPostgres(settings.databaseUrl, { onNotice, max: settings.dbPoolSize }) };
  if (settings.memory) {
    // From a template, the database is kept when this server closes, emptied for the process's next one.
    return { db: settings.memoryTemplate ? await openKeptPglite(await memoryTemplate(settings.memoryTemplate)) : await openPglite(undefined) };
  }
  const embedded = await openEmbedded({ dataDir: settings.dataDir, logger }, { onNotice, max: settings.dbPoolSize });
  return { db: embedded.db, embeddedExit: embedded.exited };
}

/** Builds and (by default) starts a server from settings. */
export function startServer(overrides: Partial<Settings> | Settings, opts: StartOptions = {}): Promise<FleetServer> {
  return startServerWithHooks(overrides, opts, {});
}

/** `startServer` with faults injected: for tests only (not exported by the package). */
export async function startServerWithHooks(overrides: Partial<Settings> | Settings, opts: StartOptions, hooks: ServerTestHooks): Promise<FleetServer> {
  const settings = makeSettings(overrides);
  const logger = opts.logger ?? pino({ level: settings.logLevel, base: { service: 'fleetplane' } });
  const metrics = new Metrics({ processMetrics: opts.listen !== false });
  // Before the database: unusable certificate files stop the start at once.
  const tlsFiles: TlsFiles | undefined = settings.tlsCert && settings.tlsKey ? { certFile: settings.tlsCert, keyFile: settings.tlsKey } : undefined;
  const tls = tlsFiles ? await readTlsPair(tlsFiles) : undefined;
  // Unusable login settings (an unreadable secret file, a bad issuer URL) stop the start before the database too.
  const login = loginFromSettings(settings, logger.child({ component: 'login' }));
  const startedAt = performance.now();
  // Before the database: a port in use fails the start at once, not after the storage started and migrated.
  const listening = opts.listen !== false;
  const worker = cluster.isWorker && settings.workers > 1;
  const reserved = opts.reservedPort ?? (listening && !worker ? await reservePort(settings) : undefined);
  let stun: StunServer | undefined;
  let opened: OpenedDatabase;
  try {
    if (listening && settings.privatePort !== undefined && !worker) await probePort(settings.privateHost, settings.privatePort, '--private-port');
    if (listening) {
      stun = await startStunFromSettings(settings, metrics.registry, logger.child({ component: 'stun' }));
    }
    opened = await openDatabase(settings, logger);
  } catch (err) {
    reserved?.close();
    await stun?.close();
    throw err;
  }
  const databaseMs = Math.round(performance.now() - startedAt);
  const db = instrument(opened.db, ({ durationMs, ok, label }) => {
    metrics.dbQueries.inc({ statement: label, ok: ok ? 'true' : 'false' });
    metrics.dbDuration.observe({ statement: label }, durationMs / 1000);
  });
  let adminToken: AdminToken;
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ applied }, 'schema migrations applied');
    adminToken = await resolveAdminToken(db, {
      configured: settings.adminToken,
      dataDir: settings.databaseUrl || settings.memory ? undefined : settings.dataDir,
    });
  } catch (err) {
    reserved?.close();
    await stun?.close();
    // The embedded PostgreSQL and the data directory's lock must not outlive a failed start.
    await opened.db.close().catch((closeErr: unknown) => logger.warn({ err: closeErr }, 'closing storage after a failed start failed'));
    throw err;
  }
  const bus = opts.bus ?? (await createBus(settings, db, logger, hooks.bus ?? {}));
  const busStats = (bus as { stats?: Readonly<BusStats> }).stats;
  if (busStats) metrics.observeBus(busStats);
  const store = new Store(db, bus, settings.staleAfter);
  const access = new Access({
    store,
    adminHash: adminToken.hash,
    db,
    revocationCheckMs: settings.revocationCheckInterval * 1000,
    logger: logger.child({ component: 'revocations' }),
    publicUrl: settings.publicUrl,
  });
  const replicaId = randomUUID();
  const watchMetrics = new WatchMetrics(metrics.registry);
  const streams = new StreamOwner({
    queueLimit: () => settings.watchQueueLimit,
    minKernelHeld: settings.watchBufferLimit,
    tcpMemory: hooks.tcpMemory ?? procTcpMemory,
    metrics: new StreamMetrics(metrics.registry),
    queuedBytes: watchMetrics.queuedBytes,
    logger: logger.child({ component: 'streams' }),
  });
  const fleet = new Fleet({ store, bus, settings, replicaId, registry: metrics.registry, logger, fanOutTimes: watchMetrics.fanOutTimes, streams });
  // The gateway's private listener must be up before the replica advertises its URL.
  const connections = ConnectionLimiter.fromSettings(metrics, settings);
  const gateway = await AgentGateway.start({
    settings,
    db,
    bus,
    metrics,
    connections,
    streams,
    replicaId,
    fleet: { presence: fleet.presence, tunnelStatus: (device, frame, reply) => fleet.tunnelStatus(device, frame, reply) },
    logger: logger.child({ component: 'gateway' }),
  });
  let relay: RelayService;
  try {
    relay = await RelayService.start({
      settings,
      replicas: () => listReplicas(db),
      streams,
      gateway,
      registry: metrics.registry,
      logger: logger.child({ component: 'relay' }),
    });
  } catch (err) {
    await gateway.shutdown();
    throw err;
  }
  const replica = new ReplicaRegistry({
    db,
    id: replicaId,
    privateUrl: gateway.privateUrl,
    relay: { on: settings.relay, url: settings.relayUrl },
    leaseTtlMs: settings.replicaLeaseTtl * 1000,
    onRegisteredAgain: () => fleet.presence.reassert(),
    logger: logger.child({ component: 'replicas' }),
  });
  await replica.start();
  let closing = false;
  const stop = new AbortController();
  const ctx: ServerContext = {
    settings,
    store,
    bus,
    metrics,
    logger,
    access,
    connections,
    clusterMetrics: cluster.isWorker && settings.workers > 1 ? clusterMetricsSource(metrics.registry) : undefined,
    draining: () => closing,
    async isReady() {
      if (closing) return false;
      try {
        await db.query('SELECT 1');
        return true;
      } catch (err) {
        logger.warn({ err }, 'readiness check: database unreachable');
        return false;
      }
    },
  };
  const watch = new WatchEngine(store, bus, settings, watchMetrics, logger, streams, fleet.presence);
  const loginModules = [authRoutes(login), userSessionRoutes(), dashboardRoutes(opts.dashboardDir)];
  const app = await buildApp(ctx, [watchRoutes(watch), pageRoutes(watch, fleet.convergence), fleet.routes(), replicaRoutes(), gateway.routes(), relay.routes(), ...loginModules, ...(opts.modules ?? [])], tls, { eagerValidation: hooks.eagerValidation === true });
  streams.start();
  watch.start();
  const tokensAt = performance.now();
  await store.credentials.loadTokens();
  const tokensMs = Math.round(performance.now() - tokensAt);
  const revocations = access.revocations;
  revocations.subscribe((ids) => streams.endRevoked(ids));
  revocations.start();
  const ephemeral = new EphemeralCollector({
    store,
    replicaId,
    offlineTimeoutSeconds: settings.ephemeralOfflineTimeout,
    logger: logger.child({ component: 'ephemeral' }),
  });
  ephemeral.start();

  const compaction = runPeriodically(
    settings.compactionInterval * 1000,
    stop.signal,
    async () => {
      const res = await store.changes.compact(settings.tombstoneRetention);
      if (res.tombstones > 0) {
        metrics.compactedTombstones.inc(res.tombstones);
        logger.info(res, 'compacted tombstones');
      }
    },
    (err) => logger.error({ err }, 'compaction failed'),
  );
  // Audit retention: one replica at a time (an advisory lock), at most every 5 minutes.
  const auditPruning =
    settings.auditRetention > 0
      ? runPeriodically(
          Math.min(300, Math.max(1, settings.auditRetention / 2)) * 1000,
          stop.signal,
          async () => {
            const res = await pruneAudit(db, settings.auditRetention, { signal: stop.signal });
            if (res.deleted > 0) {
              metrics.auditPruned.inc(res.deleted);
              logger.info({ deleted: res.deleted }, 'deleted audit entries past retention');
            }
          },
          (err) => logger.error({ err }, 'audit retention failed; retrying at the next round'),
        )
      : Promise.resolve();

  const graceMs = settings.shutdownGrace * 1000;
  const close = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    // How long each step of a drain took, in one line: a slow restart shows where its time went.
    const phases: Record<string, number> = {};
    const abandoned: string[] = [];
    const stopStartedAt = performance.now();
    // The steps end a little before the grace, so that `serve` has time to write the last lines and exit within it.
    const deadline = stopStartedAt + graceMs - Math.min(1_000, graceMs / 5);
    const left = (): number => Math.max(0, deadline - performance.now());
    let mark = stopStartedAt;
    // Every step is bounded by what is left of the grace, whatever clients or the database do: a step past
    // it is left behind (logged), and the stop goes on.
    const phase = async (name: string, step: () => Promise<unknown>): Promise<void> => {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), left())));
      try {
        const outcome = await Promise.race([step().catch((err: unknown) => logger.error({ err, phase: name }, 'a shutdown step failed')), timedOut]);
        if (outcome === 'timeout') abandoned.push(name);
      } finally {
        clearTimeout(timer);
      }
      const now = performance.now();
      phases[name] = Math.round(now - mark);
      mark = now;
    };
    // Refuse new connections first: a client reconnecting now gets a refusal it retries (elsewhere, or here
    // after the restart), not a 503 from a server that is draining; open connections drain below.
    const serverClosed = new Promise<void>((resolve) => {
      if (!app.server.listening) return resolve();
      app.server.close(() => resolve());
    });
    stop.abort();
    await phase('background', () => Promise.all([stun?.close(), revocations.stop(), ephemeral.stop()]));
    // Requests in flight on the tunnels finish (bounded), then every stream gets its last line and closes.
    await phase('tunnels', () => {
      relay.drain();
      return gateway.drain();
    });
    await phase('streams', () => streams.shutdown(Math.min(STREAM_GRACE_MS, left())));
    await phase('watches', () => watch.shutdown());
    await phase('gateway', async () => {
      await relay.shutdown();
      await gateway.shutdown();
    });
    // Requests on connections already open are answered (with Connection: close, so each
    // connection ends after its request): an agent whose tunnel just closed reports by PUT,
    // and its status joins a batch as usual. A connection that never sent a request (clients
    // open spare ones) or sends one slowly would otherwise hold the close: hence the grace.
    const force = setTimeout(() => closeAllConnections(app.server), Math.min(CLOSE_GRACE_MS, left() / 2));
    await phase('http', async () => {
      closeHttp2Sessions(app.server);
      await app.close();
      await serverClosed;
    });
    clearTimeout(force);
    // Once no request can reach the batcher: the last batch holds every status answered
    // above and the disconnections of all streams and tunnels.
    await phase('statuses', () => fleet.close());
    await phase('database', async () => {
      await compaction;
      await auditPruning;
      await replica.stop();
      await bus.close();
    });
    // The storage closes whatever happened before: the embedded PostgreSQL must not outlive the server.
    await phase('storage', () => db.close());
    metrics.up.set(0);
    const totalMs = Math.round(performance.now() - stopStartedAt);
    if (abandoned.length > 0) logger.error({ phasesMs: phases, totalMs, abandoned, graceMs }, 'stopped at the end of the shutdown grace, leaving steps unfinished');
    else if (totalMs > SLOW_STOP_MS) logger.warn({ phasesMs: phases, totalMs }, 'stopped, slowly');
    else logger.info({ phasesMs: phases, totalMs }, 'stopped');
  };

  let url: string | undefined;
  const certificate = tlsFiles ? new ReloadableCertificate(tlsFiles, app.server, logger) : undefined;
  if (listening) {
    try {
      await app.ready();
      if (reserved) await reserved.handTo(app.server, LISTEN_BACKLOG, logger);
      else await listenIn(app.server, settings);
    } catch (err) {
      // A port in use: what started must stop, or its timers and connections keep the process alive.
      await close().catch((closeErr: unknown) => logger.warn({ err: closeErr }, 'closing after a failed listen failed'));
      throw err;
    }
    logger.info(
      {
        phasesMs: { database: databaseMs, tokens: tokensMs, total: Math.round(performance.now() - startedAt) },
        ...(stun ? { stun: { port: stun.port, altPort: stun.altPort } } : {}),
      },
      'started',
    );
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : settings.port;
    const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
    url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
    if (!tls && !isLoopbackHost(settings.host)) {
      logger.warn(
        { host: settings.host },
        'listening beyond loopback without TLS: tokens cross the network in clear text; set --tls-cert and --tls-key, or put a TLS-terminating proxy in front',
      );
    }
  }

  return {
    app,
    ctx,
    db,
    adminToken,
    watch,
    streams,
    bus,
    replica,
    gateway,
    relay,
    fleet,
    revocations,
    ephemeral,
    url,
    stun,
    storageLost: new Promise<Error>((resolveLost) => {
      void opened.embeddedExit?.then(({ expected }) => {
        if (!expected) resolveLost(new Error('the embedded PostgreSQL exited while the server was running'));
      });
    }),
    async reloadTls() {
      if (!certificate) {
        logger.info('TLS is off (no --tls-cert): nothing to reload');
        return false;
      }
      return certificate.reload();
    },
    close,
  };
}

/** A cluster worker listens through its primary (which holds the port), at the end of its start. */
async function listenIn(server: App['server'], settings: Settings): Promise<void> {
  const host = await bindAddress(settings.host);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: settings.port, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

