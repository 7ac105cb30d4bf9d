/**
 * Chooses the path WireGuard takes to each peer (docs/protocol.md "Paths
 * between peers"): reads `wg show dump` every second, lets each PeerPath
 * judge its peer, points WireGuard where they decide, and reports the paths.
 */
import type { Logger } from 'pino';
import type { DesiredDataplane, DesiredPeer, RelayedDevice, WgPeerState } from '../dataplane/index.js';
import { Wakeup } from '../wakeup.js';
import { PeerPath, type PathContext } from './peer-path.js';
import { PathReporter, type PathReport, type PeerObservation } from './path-report.js';
import type { RelayClient } from './relay-client.js';

/** What the path manager needs of the dataplane (the linux one). */
export interface PathDataplane {
  peersNow(signal?: AbortSignal): Promise<WgPeerState[]>;
  setPeerPath(publicKey: string, endpoint: string, keepaliveSeconds: number, signal?: AbortSignal): Promise<boolean>;
}

export interface PathManagerOptions {
  dataplane: PathDataplane;
  /** Undefined when the relay is off. */
  relay: RelayClient | undefined;
  ownPublicKey: string;
  keepaliveSeconds: number;
  /** Probe STUN again now (a path broke: the agent's own mapping may have changed). */
  restun: () => void;
  /** Sends the path report with the status. */
  report: (report: PathReport) => void;
  logger: Logger;
  tickMs?: number;
  now?: () => number;
}

const TICK_MS = 1_000;

export class PathManager {
  readonly #o: PathManagerOptions;
  readonly #peers = new Map<string, { path: PeerPath; desired: DesiredPeer }>();
  readonly #wake = new Wakeup();
  readonly #reporter = new PathReporter();
  #relayed: readonly RelayedDevice[] = [];
  #started = false;

  constructor(options: PathManagerOptions) {
    this.#o = options;
  }

  /** The peers, their candidates and the devices behind the relay device, from each desired state the dataplane applied. */
  setDesired(desired: Pick<DesiredDataplane, 'peers' | 'relayed'>): void {
    this.#relayed = desired.relayed;
    this.#setPeers(desired.peers);
  }

  #setPeers(peers: readonly DesiredPeer[]): void {
    const now = this.#now();
    const keep = new Set<string>();
    let changed = false;
    for (const desired of peers) {
      keep.add(desired.public_key);
      let entry = this.#peers.get(desired.public_key);
      if (!entry) {
        entry = { path: new PeerPath(desired.public_key, this.#o.ownPublicKey, now), desired };
        this.#peers.set(desired.public_key, entry);
      }
      entry.desired = desired;
      if (entry.path.setCandidates(desired.candidates)) {
        changed = true;
        this.#o.logger.debug({ peer: desired.public_key, candidates: desired.candidates }, 'peer candidates');
      }
    }
    for (const key of this.#peers.keys()) if (!keep.has(key)) this.#peers.delete(key);
    this.#o.relay?.proxies.retain(keep);
    if (changed || !this.#started) this.#wake.fire();
  }

  /** The relay session opened or closed. */
  relayChanged(): void {
    for (const { path } of this.#peers.values()) path.relayReconnected();
    this.#wake.fire();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#started = true;
    while (!signal.aborted) {
      try {
        await this.#tick(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.#o.logger.warn({ err }, 'judging peer paths failed; trying again');
      }
      await this.#wake.wait(signal, this.#o.tickMs ?? TICK_MS);
    }
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  #context(now: number): PathContext {
    const relay = this.#o.relay;
    return {
      now,
      relayUp: relay?.connected === true,
      isRelayEndpoint: (endpoint) => relay?.proxies.isRelayEndpoint(endpoint) === true,
    };
  }

  async #tick(signal: AbortSignal): Promise<void> {
    if (this.#peers.size === 0) return;
    const readings = new Map((await this.#o.dataplane.peersNow(signal)).map((p) => [p.public_key, p]));
    const now = this.#now();
    const ctx = this.#context(now);
    let restun = false;
    for (const [key, { path }] of this.#peers) {
      const reading = readings.get(key);
      // Not on the interface yet (the dataplane adds it with the next apply).
      if (!reading) continue;
      const decision = path.observe(reading, ctx);
      if (decision.restun) restun = true;
      if (decision.type === 'keep') continue;
      const endpoint = decision.type === 'try-direct' ? path.candidates[decision.index] : await this.#o.relay?.proxies.endpointFor(key);
      if (endpoint === undefined) continue;
      if (await this.#o.dataplane.setPeerPath(key, endpoint, this.#o.keepaliveSeconds, signal)) {
        path.started(decision, this.#now());
        this.#o.logger.debug({ peer: key, endpoint, trial: decision.type }, 'trying a path');
      }
    }
    if (restun) this.#o.restun();
    const observations: PeerObservation[] = [...this.#peers.values()].map(({ path, desired }) => {
      const reading = readings.get(desired.public_key);
      return { desired, reading, kind: reading ? path.kind(reading, ctx) : 'none' };
    });
    for (const r of this.#relayed) {
      // What the relay device's peer shows is what these devices' traffic rides on.
      const reading = readings.get(r.via_public_key);
      const kind = reading && reading.latest_handshake > 0 ? 'relay' : 'none';
      observations.push({ desired: { public_key: r.public_key, device_id: r.device_id }, reading, kind, via: `device:${r.via_device_id}` });
    }
    const report = this.#reporter.update(
      observations,
      { relayId: this.#o.relay?.relayId ?? null, isRelayEndpoint: ctx.isRelayEndpoint, now },
    );
    if (report) this.#o.report(report);
  }
}
