/**
 * The `linux` dataplane: applies a desired state with `ip`, `wg` and `nft`,
 * as differences against what the machine has.
 */
import type { Logger } from 'pino';
import type { CommandRunner } from './command-runner.js';
import type { ApplyResult, Dataplane, DataplaneDescription } from './dataplane.js';
import { describeDesired } from './describe.js';
import { isInterfaceName, type DesiredDataplane } from './desired-state.js';
import { CommandError, DataplaneAbortedError, DataplaneError, type DataplaneStep } from './errors.js';
import { parseAddrShow, parseRouteShow, type RouteState } from './ip-json.js';
import { samePrivateKey } from './keys.js';
import { peerCommands, planPeerChanges } from './peer-plan.js';
import { NFT_FAMILY, NFT_TABLE, renderNftables, renderNftablesRemoval } from './render-nftables.js';
import { loadOwnTableScript } from './nft-own-table.js';
import { renderWireGuard } from './render-wireguard.js';
import { parseWgDump, type WgDump } from './wg-dump.js';
import { createSerializer, type Serializer } from './serializer.js';
import { withTempFile } from './temp-file.js';

/**
 * Routes this dataplane adds carry this `proto` number, so it can find and
 * remove its own routes (also after a restart) without touching others.
 */
export const ROUTE_PROTO = '70';

export interface LinuxDataplaneOptions {
  interfaceName: string;
  /** Runs `ip`, `wg`, `nft`, `wireguard-go`; wrap with a prefix to work inside a network namespace. */
  runner: CommandRunner;
  /** Userspace WireGuard used when the kernel has no module; null disables the fallback. Default `wireguard-go`. */
  wireguardGo?: string | null;
  /** Where the ruleset for `nft -f` and the private key for `wg` are written (briefly, 0600). Default the OS temp dir. */
  tempDir?: string;
  logger?: Logger;
}

export type WireGuardBackend = 'kernel' | 'userspace';

const WIREGUARD_GO_ENV = { LOG_LEVEL: 'silent' } as const;

const FORWARDING_SYSCTL = { 4: 'net.ipv4.ip_forward', 6: 'net.ipv6.conf.all.forwarding' } as const;

/**
 * The address families this device forwards: both for the relay device
 * (between its peers); for a subnet router, those of its routes only (turning
 * IPv6 forwarding on makes Linux ignore router advertisements, which an
 * IPv4-only router must not pay for).
 */
function forwardedFamilies(desired: DesiredDataplane): (4 | 6)[] {
  if (desired.forwarding) return [4, 6];
  const families = new Set(desired.subnet_routes.map((route) => (route.includes(':') ? 6 : 4)));
  return ([4, 6] as const).filter((f) => families.has(f));
}

export class LinuxDataplane implements Dataplane {
  readonly mode = 'linux' as const;
  private readonly name: string;
  private readonly serialize: Serializer = createSerializer();
  private last: DesiredDataplane | null = null;
  private appliedAt: Date | null = null;
  /** The ruleset text last loaded by this instance. */
  private loadedFirewall: string | null = null;
  /** Endpoint last set per peer public key (see planPeerChanges). */
  private readonly lastSetEndpoints = new Map<string, string>();
  private createdBackend: WireGuardBackend | null = null;

  constructor(private readonly options: LinuxDataplaneOptions) {
    if (!isInterfaceName(options.interfaceName)) {
      throw new DataplaneError('validate', `invalid interface name ${JSON.stringify(options.interfaceName)}`);
    }
    this.name = options.interfaceName;
  }

  /** How this instance created the interface, or null if it found it existing (or hasn't yet). */
  get backend(): WireGuardBackend | null {
    return this.createdBackend;
  }

  /**
   * Order: firewall (atomic, and first so a stricter group is in force before
   * new peers are), interface and keys, address/MTU/link, peers, routes.
   */
  apply(desired: DesiredDataplane, signal?: AbortSignal): Promise<ApplyResult> {
    return this.serialize(async () => {
      const actions: string[] = [];
      await this.step('validate', signal, async () => {
        if (desired.interface.name !== this.name) {
          throw new DataplaneError('validate', `desired interface ${desired.interface.name} is not ${this.name}`);
        }
        // Every value `ip` and `wg` get below is one wireguard.conf would hold: rendering it checks each is of its type.
        renderWireGuard(desired);
      });
      await this.step('firewall', signal, () => this.applyFirewall(desired, actions, signal));
      const dump = await this.step('interface', signal, () => this.ensureInterface(desired, actions, signal));
      await this.step('address', signal, () => this.applyLink(desired, actions, signal));
      await this.step('peers', signal, () => this.applyPeers(desired, dump, actions, signal));
      await this.step('routes', signal, () => this.applyRoutes(desired, actions, signal));
      const families = forwardedFamilies(desired);
      if (families.length > 0) await this.step('routes', signal, () => this.enableForwarding(families, actions, signal));
      this.last = desired;
      this.appliedAt = new Date();
      if (actions.length > 0) this.options.logger?.info({ interface: this.name, actions }, 'dataplane applied');
      return { changed: actions.length > 0, actions };
    });
  }

  /** Deletes the interface (its routes go with it; a wireguard-go daemon exits) and the firewall table. */
  cleanup(signal?: AbortSignal): Promise<void> {
    return this.serialize(async () => {
      const errors: unknown[] = [];
      try {
        if (await this.linkExists(signal)) await this.run('ip', ['link', 'del', 'dev', this.name], signal);
      } catch (error) {
        errors.push(error);
      }
      try {
        await this.loadRuleset(renderNftablesRemoval(), signal);
      } catch (error) {
        errors.push(error);
      }
      this.last = null;
      this.appliedAt = null;
      this.loadedFirewall = null;
      this.lastSetEndpoints.clear();
      if (errors.length > 0) {
        throw new DataplaneError('cleanup', errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; '), {
          cause: errors.length === 1 ? errors[0] : new AggregateError(errors),
        });
      }
    });
  }

  /** Live peers (handshakes, traffic) from `wg show dump`; the rest from the last applied state. */
  async describe(signal?: AbortSignal): Promise<DataplaneDescription> {
    const base = describeDesired('linux', this.name, this.last, this.appliedAt);
    let dump: WgDump;
    try {
      dump = parseWgDump((await this.run('wg', ['show', this.name, 'dump'], signal)).stdout);
    } catch (error) {
      if (error instanceof CommandError) return { ...base, peers: [] };
      throw error;
    }
    const deviceIds = new Map((this.last?.peers ?? []).map((p) => [p.public_key, p.device_id]));
    return {
      ...base,
      peers: dump.peers.map((p) => ({
        public_key: p.public_key,
        device_id: deviceIds.get(p.public_key) ?? null,
        endpoint: p.endpoint,
        allowed_ips: p.allowed_ips,
        latest_handshake: p.latest_handshake === 0 ? null : new Date(p.latest_handshake * 1000).toISOString(),
        rx_bytes: p.rx_bytes,
        tx_bytes: p.tx_bytes,
      })),
    };
  }

  /** WireGuard's peers as they are now (`wg show dump`): endpoints in use, handshakes, bytes. */
  async peersNow(signal?: AbortSignal): Promise<WgDump['peers']> {
    return (await this.dump(signal)).peers;
  }

  /**
   * Points a peer at `endpoint` with a fresh session: the peer is removed
   * and added again with the allowed IPs it has, in one `wg set`, so its
   * keepalive (turned on from nothing) starts a handshake at once and the
   * path is judged by that handshake alone. Serialized with `apply`, so it
   * never writes allowed IPs an apply is changing. False when WireGuard has
   * no such peer (yet, or any more).
   */
  setPeerPath(publicKey: string, endpoint: string, keepaliveSeconds: number, signal?: AbortSignal): Promise<boolean> {
    return this.serialize(async () => {
      const peer = (await this.dump(signal)).peers.find((p) => p.public_key === publicKey);
      if (!peer) return false;
      const allowed = peer.allowed_ips.length > 0 ? ['allowed-ips', peer.allowed_ips.join(',')] : [];
      const keepalive = ['persistent-keepalive', keepaliveSeconds > 0 ? String(keepaliveSeconds) : 'off'];
      await this.run('wg', ['set', this.name, 'peer', publicKey, 'remove', 'peer', publicKey, 'endpoint', endpoint, ...keepalive, ...allowed], signal);
      return true;
    });
  }

  private async step<T>(step: DataplaneStep, signal: AbortSignal | undefined, body: () => Promise<T>): Promise<T> {
    if (signal?.aborted) throw new DataplaneAbortedError({ cause: signal.reason });
    try {
      return await body();
    } catch (error) {
      if (signal?.aborted) throw new DataplaneAbortedError({ cause: error });
      if (error instanceof DataplaneError) throw error;
      throw new DataplaneError(step, error instanceof Error ? error.message : String(error), { cause: error });
    }
  }

  private run(command: string, args: readonly string[], signal?: AbortSignal) {
    return this.options.runner.run(command, args, { signal });
  }

  private async linkExists(signal?: AbortSignal): Promise<boolean> {
    try {
      await this.run('ip', ['link', 'show', 'dev', this.name], signal);
      return true;
    } catch (error) {
      if (error instanceof CommandError) return false;
      throw error;
    }
  }

  /** Only a script on the agent's own table reaches `nft` (ForeignRulesetError otherwise). */
  private loadRuleset(text: string, signal?: AbortSignal): Promise<void> {
    return loadOwnTableScript(this.options.runner, text, this.options.tempDir, signal);
  }

  private async applyFirewall(desired: DesiredDataplane, actions: string[], signal?: AbortSignal): Promise<void> {
    const text = renderNftables(desired);
    if (text === this.loadedFirewall) {
      // Unchanged since our last load: reload only if someone removed the table.
      try {
        await this.run('nft', ['list', 'table', NFT_FAMILY, NFT_TABLE], signal);
        return;
      } catch (error) {
        if (!(error instanceof CommandError)) throw error;
      }
    }
    this.loadedFirewall = null;
    await this.loadRuleset(text, signal);
    this.loadedFirewall = text;
    actions.push('firewall loaded');
  }

  private async dump(signal?: AbortSignal): Promise<WgDump> {
    return parseWgDump((await this.run('wg', ['show', this.name, 'dump'], signal)).stdout);
  }

  private async createInterface(actions: string[], signal?: AbortSignal): Promise<void> {
    try {
      await this.run('ip', ['link', 'add', 'dev', this.name, 'type', 'wireguard'], signal);
      this.createdBackend = 'kernel';
      actions.push('interface created (kernel)');
      return;
    } catch (kernelError) {
      const wireguardGo = this.options.wireguardGo === undefined ? 'wireguard-go' : this.options.wireguardGo;
      if (wireguardGo === null || !(kernelError instanceof CommandError)) throw kernelError;
      this.options.logger?.info({ interface: this.name, err: kernelError }, 'no kernel WireGuard; starting wireguard-go');
      try {
        // It daemonizes; with LOG_LEVEL set (pino users often set it) the daemon would keep our
        // stdout open and the call would hang. (Don't set WG_PROCESS_FOREGROUND: the daemon appends
        // its own, and Go's getenv takes the first.)
        await this.options.runner.run(wireguardGo, [this.name], { signal, env: WIREGUARD_GO_ENV });
      } catch (userspaceError) {
        throw new DataplaneError('interface', `cannot create ${this.name}: ${kernelError.message}; ${String(userspaceError)}`, {
          cause: new AggregateError([kernelError, userspaceError]),
        });
      }
      this.createdBackend = 'userspace';
      actions.push('interface created (wireguard-go)');
    }
  }

  /** Creates the interface if `wg` can't see it; sets private key and listen port if they differ. */
  private async ensureInterface(desired: DesiredDataplane, actions: string[], signal?: AbortSignal): Promise<WgDump> {
    let dump: WgDump;
    try {
      dump = await this.dump(signal);
    } catch (error) {
      if (!(error instanceof CommandError)) throw error;
      await this.createInterface(actions, signal);
      dump = await this.dump(signal);
    }
    const iface = desired.interface;
    const keyOk = dump.interface.private_key !== null && samePrivateKey(dump.interface.private_key, iface.private_key);
    const args: string[] = [];
    if (dump.interface.listen_port !== iface.listen_port) args.push('listen-port', String(iface.listen_port));
    if (!keyOk) {
      // A private file, not the command line (visible to every user in /proc) nor /dev/stdin
      // (Node gives children a socket there, which wg can't fopen).
      await withTempFile(
        `${iface.private_key}\n`,
        (file) => this.run('wg', ['set', this.name, ...args, 'private-key', file], signal),
        this.options.tempDir,
      );
      actions.push('private key set');
    } else if (args.length > 0) {
      await this.run('wg', ['set', this.name, ...args], signal);
    }
    if (args.length > 0) actions.push(`listen port ${iface.listen_port}`);
    return dump;
  }

  private async applyLink(desired: DesiredDataplane, actions: string[], signal?: AbortSignal): Promise<void> {
    const link = parseAddrShow((await this.run('ip', ['-j', 'addr', 'show', 'dev', this.name], signal)).stdout);
    const want = desired.interface.address;
    if (!link.addresses.includes(want)) {
      await this.run('ip', ['addr', 'replace', want, 'dev', this.name], signal);
      actions.push(`address ${want}`);
    }
    for (const stale of link.addresses.filter((a) => a !== want)) {
      await this.run('ip', ['addr', 'del', stale, 'dev', this.name], signal);
      actions.push(`address ${stale} removed`);
    }
    if (link.mtu !== desired.interface.mtu || !link.up) {
      await this.run('ip', ['link', 'set', 'dev', this.name, 'mtu', String(desired.interface.mtu), 'up'], signal);
      actions.push(`link up, mtu ${desired.interface.mtu}`);
    }
  }

  private async applyPeers(desired: DesiredDataplane, dump: WgDump, actions: string[], signal?: AbortSignal): Promise<void> {
    const changes = planPeerChanges(desired.peers, dump.peers, this.lastSetEndpoints);
    for (const args of peerCommands(this.name, changes)) await this.run('wg', args, signal);
    const verb = { add: 'added', update: 'updated', remove: 'removed' } as const;
    for (const change of changes) {
      actions.push(`peer ${verb[change.kind]} ${change.public_key}`);
      if (change.kind === 'remove') this.lastSetEndpoints.delete(change.public_key);
    }
    for (const peer of desired.peers) if (peer.endpoint !== null) this.lastSetEndpoints.set(peer.public_key, peer.endpoint);
  }

  /**
   * Turns on forwarding of `families` (forwardedFamilies). Forwarding is
   * turned on and never off: other software on the machine may rely on it,
   * and the firewall's forward chain limits what comes from the tunnel to
   * the tunnel (a relay device) and to the device's own routes.
   */
  private async enableForwarding(families: readonly (4 | 6)[], actions: string[], signal?: AbortSignal): Promise<void> {
    for (const key of families.map((f) => FORWARDING_SYSCTL[f])) {
      const now = (await this.run('sysctl', ['-n', key], signal)).stdout.trim();
      if (now === '1') continue;
      await this.run('sysctl', ['-w', `${key}=1`], signal);
      actions.push(`${key} on`);
    }
  }

  private async routes(family: 4 | 6, signal?: AbortSignal): Promise<RouteState[]> {
    const args = [`-${family}`, '-j', 'route', 'show', 'table', 'main', 'dev', this.name, 'proto', ROUTE_PROTO];
    return parseRouteShow((await this.run('ip', args, signal)).stdout, family);
  }

  private async applyRoutes(desired: DesiredDataplane, actions: string[], signal?: AbortSignal): Promise<void> {
    const current = [...(await this.routes(4, signal)), ...(await this.routes(6, signal))];
    const have = new Map(current.map((r) => [r.destination, r.via]));
    for (const route of desired.routes) {
      if (have.has(route.destination) && have.get(route.destination) === route.via) continue;
      const via = route.via === null ? [] : ['via', route.via];
      await this.run('ip', ['route', 'replace', route.destination, ...via, 'dev', this.name, 'proto', ROUTE_PROTO], signal);
      actions.push(`route ${route.destination}${route.via === null ? '' : ` via ${route.via}`}`);
    }
    const wanted = new Set(desired.routes.map((r) => r.destination));
    for (const route of current) {
      if (wanted.has(route.destination)) continue;
      await this.run('ip', ['route', 'del', route.destination, 'dev', this.name, 'proto', ROUTE_PROTO], signal);
      actions.push(`route ${route.destination} removed`);
    }
  }
}
