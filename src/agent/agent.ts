/**
 * The agent daemon: enrolls, watches its organization, reconciles the
 * dataplane, reports status, publishes endpoints, and serves the local API
 * and the tunnel methods.
 */
import { setMaxListeners } from 'node:events';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { ClientOptions as WsOptions } from 'ws';
import { deviceLoginPrompt, FleetplaneClient, NotFoundError, type FetchLike } from '../client/index.js';
import { AGENT_METHODS, type DeviceLogin } from '../protocol/index.js';
import { createExecRunner, LinuxDataplane, RenderDataplane, type Dataplane } from './dataplane/index.js';
import { AgentFatalError, errorMessage } from './errors.js';
import { ensureEnrolled, type Enrolled } from './identity/enrollment.js';
import { StateDir, StateDirError } from './identity/state-dir.js';
import { StateDirLock, StateDirLockedError } from './identity/state-lock.js';
import { DeviceCredential } from './identity/token-renewal.js';
import { trustedFetch } from './identity/trusted-fetch.js';
import { LocalApi, LocalApiListenError, LocalApiNotReadyError } from './local-api.js';
import type { AgentOptions } from './options.js';
import { deletedError, refusalError } from './refusal.js';
import { describeAgent, type AgentStatusView, type TunnelStateType } from './status/agent-status.js';
import type { NatDiscovery } from './nat/nat-discovery.js';
import { setUpStun } from './nat/stun-setup.js';
import { setUpPaths, type Paths } from './paths/index.js';
import { EndpointPublisher } from './status/endpoint-publisher.js';
import { runEndpointUpkeep } from './status/endpoint-upkeep.js';
import { interfaceEndpoints, publishedEndpoints, type InterfaceTable } from './status/endpoints.js';
import { StatusReporter } from './status/status-reporter.js';
import { agentVersion, osDescription } from './status/version.js';
import { forceSync, ForceSyncError, type ForceSyncResult } from './sync/force-sync.js';
import { InformerStateFile } from './sync/informer-state-file.js';
import { OrgWatch } from './sync/org-watch.js';
import { ReconcileLoop } from './sync/reconcile-loop.js';
import type { BackoffPolicy } from '../util/backoff.js';
import { noticingTls } from '../util/plain-http-to-tls.js';
import { Reconciler } from './sync/reconciler.js';
import { AgentMethodError, TunnelClient } from './tunnel/index.js';
import { Wakeup } from './wakeup.js';
import { checkNoParams } from './received/index.js';

export interface AgentDeps {
  logger: Logger;
  /** Builds the dataplane (tests inject one); default from `options.dataplane`. */
  createDataplane?: (options: AgentOptions, logger: Logger) => Dataplane;
  /** The failed-apply retry's backoff, over the default 0.5 s doubling to 30 s (tests that wait on a retry shorten it). */
  applyBackoff?: Partial<BackoffPolicy>;
  /**
   * The SDK's fetch (tests inject one); default the global fetch, or one
   * trusting `options.caFile`, either saying when a plain-HTTP request met
   * a server that speaks HTTPS (util/plain-http-to-tls.ts).
   */
  fetch?: FetchLike;
  /** The machine's interfaces (default `os.networkInterfaces()`). */
  interfaces?: () => InterfaceTable;
  /** Called once the local API listens (with its port) and the device is known. */
  onReady?: (info: { device_id: string; local_port: number }) => void;
  /** Where `--login` shows the user the URL and code (default: stderr). */
  loginPrompt?: (text: string) => void;
}

/** How long shutdown waits for the final offline report. */
const GOODBYE_TIMEOUT_MS = 2_000;

export function defaultDataplane(options: AgentOptions, logger: Logger): Dataplane {
  if (options.dataplane === 'linux') {
    return new LinuxDataplane({ interfaceName: options.interfaceName, runner: createExecRunner(), tempDir: options.stateDir, logger });
  }
  return new RenderDataplane({ stateDir: options.stateDir, interfaceName: options.interfaceName });
}

/** The parts that exist once the device is enrolled. */
interface Running {
  enrolled: Enrolled;
  client: FleetplaneClient;
  dataplane: Dataplane;
  reconciler: Reconciler;
  reporter: StatusReporter;
  watch: OrgWatch;
  publisher: EndpointPublisher;
  /** Fired to publish now (STUN's state changed). */
  publishNow: Wakeup;
  /** Undefined where STUN is off. */
  stun: NatDiscovery | undefined;
  /** Undefined where paths are not managed (the render dataplane). */
  paths: Paths | undefined;
  loop: ReconcileLoop;
  /** The device token in use, renewed before it expires. */
  credential: DeviceCredential;
}

/**
 * One agent. `run(signal)` resolves after a clean shutdown (signal aborted),
 * and rejects with AgentFatalError when it must stop for good (token
 * refused, device deleted, enrollment refused, unusable state dir or settings).
 * Before it talks to the server it locks its state directory (so a second
 * agent on the same directory stops without enrolling anything) and opens
 * its local API, writing the port into the state directory.
 */
export class Agent {
  readonly #options: AgentOptions;
  readonly #deps: AgentDeps;
  readonly #log: Logger;
  readonly #stop = stopController();
  #fatal: AgentFatalError | undefined;
  #running: Running | undefined;
  #tunnelState: TunnelStateType = 'idle';
  #localApi: LocalApi | undefined;
  #lock: StateDirLock | undefined;
  #fetch: FetchLike | undefined;
  #wsOptions: WsOptions | undefined;
  #tunnelClient: TunnelClient | undefined;

  constructor(options: AgentOptions, deps: AgentDeps) {
    this.#options = options;
    this.#deps = deps;
    this.#log = deps.logger;
  }

  /** The local API's port once it listens. */
  get localPort(): number | undefined {
    return this.#localApi?.port;
  }

  async run(signal: AbortSignal): Promise<void> {
    const stop = this.#stop;
    if (signal.aborted) return;
    signal.addEventListener('abort', () => stop.abort(signal.reason), { once: true });
    const tasks: Promise<void>[] = [];
    try {
      const running = await this.#start(stop.signal);
      if (!running) return;
      const { watch, reporter, loop, credential } = running;
      const tunnel = this.#tunnel(running);
      watch.start(stop.signal);
      tasks.push(this.#guard('tunnel', tunnel.run(stop.signal)));
      tasks.push(this.#guard('token renewal', credential.run(stop.signal)));
      tasks.push(this.#guard('reconcile loop', loop.run(stop.signal)));
      tasks.push(this.#guard('status reporter', reporter.run(stop.signal)));
      if (running.stun) tasks.push(this.#guard('STUN discovery', running.stun.run(stop.signal)));
      if (running.paths) tasks.push(this.#guard('path manager', running.paths.run(stop.signal)));
      try {
        await watch.waitForSync(stop.signal);
        this.#log.info({ revision: watch.revision() }, 'watch synced');
        tasks.push(this.#guard('housekeeping', this.#housekeeping(running, stop.signal)));
      } catch (err) {
        if (!stop.signal.aborted) this.#die(this.#refusal(err));
      }
      await new Promise<void>((resolve) => {
        if (stop.signal.aborted) resolve();
        else stop.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } catch (err) {
      if (err instanceof AgentFatalError) this.#fatal ??= err;
      else if (!stop.signal.aborted) throw err;
    } finally {
      stop.abort();
      await Promise.all(tasks);
      await this.#shutdown();
    }
    if (this.#fatal) throw this.#fatal;
  }

  /** Takes the state directory, trusts `--ca-file`, opens the local API (and says where in the state directory): all before the first request. */
  async #claim(stateDir: StateDir): Promise<void> {
    const o = this.#options;
    try {
      await stateDir.ensure();
      this.#lock = await StateDirLock.acquire(stateDir.path);
    } catch (err) {
      if (err instanceof StateDirLockedError) throw new AgentFatalError('state_dir', err.message, { cause: err });
      throw new AgentFatalError('state_dir', `the state directory ${stateDir.path} can't be used: ${errorMessage(err)}`, { cause: err });
    }
    let ca: Buffer | undefined;
    if (o.caFile !== undefined) {
      try {
        ca = await readFile(o.caFile);
      } catch (err) {
        throw new AgentFatalError('config', `--ca-file ${o.caFile}: ${errorMessage(err)}`, { cause: err });
      }
      this.#wsOptions = { ca };
    }
    this.#fetch = this.#deps.fetch ?? noticingTls(ca === undefined ? (input, init) => globalThis.fetch(input, init) : trustedFetch(ca));
    try {
      this.#localApi = await LocalApi.start({
        port: o.localPort,
        stateDir: stateDir.path,
        logger: this.#log.child({ component: 'local-api' }),
        handlers: {
          status: (s) => (this.#running ? this.status(s) : Promise.reject(new LocalApiNotReadyError('the agent is enrolling'))),
          forceSync: (s) => {
            const running = this.#running;
            return running ? this.#forceSync(running, s) : Promise.reject(new ForceSyncError('unavailable', 'the agent is enrolling'));
          },
        },
      });
    } catch (err) {
      if (err instanceof LocalApiListenError) throw new AgentFatalError('config', `${err.message} (set another --local-port, or leave it out for a free one)`, { cause: err });
      if (err instanceof StateDirError) throw new AgentFatalError('state_dir', err.message, { cause: err });
      throw err;
    }
    this.#log.info({ local_port: this.#localApi.port, address_file: this.#localApi.addressFile }, 'local API listening on 127.0.0.1');
  }

  /** Enrolls and builds the parts; undefined when stopped first. */
  async #start(signal: AbortSignal): Promise<Running | undefined> {
    const o = this.#options;
    const stateDir = new StateDir(o.stateDir);
    await this.#claim(stateDir);
    const enrollEndpoints = publishedEndpoints(o.endpoints, o.endpoints.length > 0 ? [] : interfaceEndpoints(o.listenPort, o.interfaceName, this.#deps.interfaces?.()));
    let enrolled: Enrolled;
    try {
      enrolled = await ensureEnrolled(
        {
          stateDir,
          server: o.server,
          org: o.org,
          registrationKey: o.registrationKey,
          ...(o.login ? { login: { show: (l: DeviceLogin) => (this.#deps.loginPrompt ?? ((t: string) => process.stderr.write(t)))(deviceLoginPrompt(l)) } } : {}),
          hostname: o.hostname,
          endpoints: enrollEndpoints,
          advertiseCidrs: o.advertiseRoutes,
          logger: this.#log,
          fetch: this.#fetch,
        },
        signal,
      );
    } catch (err) {
      if (signal.aborted && !(err instanceof AgentFatalError)) return undefined;
      throw err;
    }
    const { identity } = enrolled;
    const log = this.#log;
    log.info({ device_id: identity.device_id, organization_id: identity.organization_id, server: enrolled.server, dataplane: o.dataplane }, 'agent starting');
    // Read at every request: a renewed token is used from the next one on.
    const client = new FleetplaneClient({ baseUrl: enrolled.server, token: () => credential.token, fetch: this.#fetch });
    const credential: DeviceCredential = new DeviceCredential({
      client,
      stateDir,
      identity,
      logger: log.child({ component: 'token' }),
      onRenewed: () => {
        // The stream and the tunnel opened with the old token would end when its overlap does.
        this.#running?.watch.shared.reconnect();
        this.#tunnelClient?.replace();
      },
      onFatal: (error) => this.#die(error instanceof NotFoundError ? deletedError(identity.device_id) : this.#refusal(error)),
    });
    const dataplane = (this.#deps.createDataplane ?? defaultDataplane)(o, log.child({ component: 'dataplane' }));
    const publishNow = new Wakeup();
    const stun = setUpStun(o, enrolled.server, dataplane, log.child({ component: 'stun' }), () => publishNow.fire());
    const publisher = new EndpointPublisher({
      client,
      org: identity.organization_id,
      deviceId: identity.device_id,
      manual: o.endpoints,
      advertiseRoutes: o.advertiseRoutes,
      listenPort: o.listenPort,
      interfaceName: o.interfaceName,
      logger: log,
      stun: () => stun?.state ?? { kind: 'off' },
      ...(this.#deps.interfaces ? { interfaces: this.#deps.interfaces } : {}),
    });
    const reporter = new StatusReporter({
      client,
      org: identity.organization_id,
      deviceId: identity.device_id,
      intervalMs: o.statusIntervalMs,
      initial: { applied_revision: null, apply_error: null, local_endpoints: publisher.localEndpoints(), os: osDescription(), agent_version: agentVersion() },
      logger: log.child({ component: 'status' }),
      onRejected: (kind, error) =>
        this.#die(kind === 'device_gone' ? deletedError(identity.device_id) : this.#refusal(error)),
    });
    const paths = setUpPaths({
      options: o,
      dataplane,
      client,
      server: enrolled.server,
      token: () => credential.token,
      wsOptions: this.#wsOptions,
      ownPublicKey: enrolled.keys.publicKey,
      restun: () => stun?.recheck(),
      report: (report) => reporter.update(report),
      logger: log,
    });
    const reconciler = new Reconciler({
      pathManaged: paths !== undefined,
      onApplied: (desired) => paths?.manager.setDesired(desired),
      deviceId: identity.device_id,
      interfaceName: o.interfaceName,
      privateKey: enrolled.keys.privateKey,
      listenPort: o.listenPort,
      dataplane,
      logger: log.child({ component: 'reconcile' }),
      onState: (state) => {
        reporter.update({ applied_revision: state.applied_revision, apply_error: state.apply_error });
        if (state.applied_revision !== null) stun?.wireguardRunning();
      },
    });
    const watch = new OrgWatch({
      client,
      org: identity.organization_id,
      deviceId: identity.device_id,
      logger: log.child({ component: 'watch' }),
      stateFile: new InformerStateFile({ dir: o.stateDir, owner: { server: enrolled.server, organizationId: identity.organization_id }, logger: log.child({ component: 'watch' }) }),
      onChange: () => loop.request(),
      onFatal: (error) => this.#die(this.#refusal(error)),
      onOwnDelete: () => {
        reporter.deviceDeleted();
        this.#die(deletedError(identity.device_id));
      },
    });
    const loop: ReconcileLoop = new ReconcileLoop({ reconciler, source: () => watch.snapshot(), resyncIntervalMs: o.resyncIntervalMs, logger: log, ...(this.#deps.applyBackoff ? { backoff: this.#deps.applyBackoff } : {}) });
    await watch.restore();
    const running: Running = { enrolled, client, dataplane, reconciler, reporter, watch, publisher, publishNow, stun, paths, loop, credential };
    this.#running = running;
    this.#deps.onReady?.({ device_id: identity.device_id, local_port: this.#localApi?.port ?? 0 });
    return running;
  }

  #tunnel(running: Running): TunnelClient {
    const tunnel = new TunnelClient({
      url: running.enrolled.server,
      token: () => running.credential.token,
      revision: () => running.reconciler.state.applied_revision ?? 0,
      logger: this.#log.child({ component: 'tunnel' }),
      ...(this.#wsOptions ? { wsOptions: this.#wsOptions } : {}),
      onStateChange: (state) => {
        this.#tunnelState = state.type;
      },
    });
    this.#tunnelClient = tunnel;
    // Statuses go over the tunnel while it acknowledges them, by PUT otherwise.
    running.reporter.attachTunnel(tunnel);
    tunnel.register(AGENT_METHODS.status, async (_params, ctx) => this.status(ctx.signal), checkNoParams);
    tunnel.register(AGENT_METHODS.forceSync, async (_params, ctx) => {
      try {
        return await this.#forceSync(running, ctx.signal);
      } catch (err) {
        if (err instanceof ForceSyncError) throw new AgentMethodError(err.code, err.message, { cause: err });
        throw err;
      }
    }, checkNoParams);
    return tunnel;
  }

  #forceSync(running: Running, signal: AbortSignal): Promise<ForceSyncResult> {
    if (this.#stop.signal.aborted) return Promise.reject(new ForceSyncError('stopping', 'the agent is stopping'));
    const both = AbortSignal.any([signal, this.#stop.signal]);
    return forceSync({ client: running.client, org: running.enrolled.identity.organization_id, watch: running.watch, reconciler: running.reconciler }, both);
  }

  /** Endpoints and local addresses, right after the first sync, then every status interval and when STUN's state changes. */
  #housekeeping({ publisher, reporter, watch, enrolled, publishNow, stun }: Running, signal: AbortSignal): Promise<void> {
    const id = enrolled.identity.device_id;
    const onFatal = (err: Error): void => this.#die(err instanceof NotFoundError ? deletedError(id) : this.#refusal(err));
    const own = () => watch.device(id);
    const onLocalChange = () => stun?.recheck();
    return runEndpointUpkeep({ publisher, reporter, own, intervalMs: this.#options.statusIntervalMs, wakeup: publishNow, onLocalChange, onFatal, logger: this.#log }, signal);
  }

  /** The agent's view of itself (see AgentStatusView). */
  async status(signal?: AbortSignal): Promise<AgentStatusView> {
    const r = this.#running;
    if (!r) throw new Error('the agent is not enrolled yet');
    const o = this.#options;
    return describeAgent(
      {
        identity: r.enrolled.identity,
        publicKey: r.enrolled.keys.publicKey,
        hostname: o.hostname,
        mode: o.dataplane,
        interfaceName: o.interfaceName,
        dataplane: r.dataplane,
        reconciler: r.reconciler,
        watch: r.watch,
        reporter: r.reporter,
        tunnel: this.#tunnelState,
        logger: this.#log,
      },
      signal,
    );
  }

  #refusal(err: unknown): AgentFatalError {
    return refusalError(err, this.#running?.credential.expiredAt());
  }

  #die(err: AgentFatalError): void {
    if (this.#fatal) return;
    this.#fatal = err;
    this.#log.fatal({ reason: err.reason, err }, err.message);
    this.#stop.abort(err);
  }

  #guard(what: string, task: Promise<void>): Promise<void> {
    return task.catch((err: unknown) => {
      if (this.#stop.signal.aborted) return;
      this.#log.error({ err }, `the ${what} failed`);
      this.#die(new AgentFatalError('internal', `the ${what} failed: ${errorMessage(err)}`, { cause: err }));
    });
  }

  async #shutdown(): Promise<void> {
    const r = this.#running;
    if (r) {
      await r.watch.stop().catch((err: unknown) => this.#log.warn({ err }, 'stopping the watch failed'));
      const reason = this.#fatal?.reason;
      if (reason !== 'token_refused' && reason !== 'token_expired' && reason !== 'device_deleted') await r.reporter.goodbye(GOODBYE_TIMEOUT_MS);
      if (this.#options.cleanupOnExit) {
        try {
          await r.dataplane.cleanup();
          this.#log.info({ interface: this.#options.interfaceName }, 'dataplane cleaned up');
        } catch (err) {
          this.#log.error({ err }, 'dataplane cleanup failed');
        }
      }
    }
    await this.#localApi?.close();
    await this.#lock?.release().catch((err: unknown) => this.#log.warn({ err }, 'removing the state directory lock failed'));
    this.#log.info('agent stopped');
  }
}

/**
 * The agent's stop. Every long-lived loop listens to it (tunnel, token
 * renewal, reconcile, status, STUN, paths, watch, state saver,
 * housekeeping and their waits): about a dozen listeners at once, by
 * design, past Node's default warning at 10, which printed a plain-text
 * MaxListenersExceededWarning among the JSON logs at every start.
 */
function stopController(): AbortController {
  const c = new AbortController();
  setMaxListeners(32, c.signal);
  return c;
}
