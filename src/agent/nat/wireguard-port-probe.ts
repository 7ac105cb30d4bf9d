import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from 'pino';
import { formatStunAddress, type StunAddress } from '../../protocol/index.js';
import type { CommandRunner } from '../dataplane/index.js';
import { applyPortSnat, forgetProbeFlows, removePortSnat, type PortSnatRule } from './port-snat.js';
import { bindingRequest, type BindingOptions } from './stun-client.js';

export interface WireguardPortProbeOptions {
  /** The STUN server's IPv4 address (the host of the agent's `--server`). */
  server: string;
  /** Its two STUN ports (`--stun-port`, `--stun-alt-port`). */
  serverPorts: readonly [number, number];
  /** The WireGuard listen port whose public mapping is wanted. */
  wireguardPort: number;
  /** Runs `nft` and `conntrack` (in the agent's network namespace). */
  runner: CommandRunner;
  logger: Logger;
  binding?: Omit<BindingOptions, 'signal'>;
}

/** How the internet sees the WireGuard port. */
export interface NatMapping {
  /** The public address of the WireGuard port, as the first STUN port saw it (`ip:port`, `[ip]:port`). */
  endpoint: string;
  /** True when the two STUN ports saw different mappings: the NAT maps by destination, so peers can't use `endpoint`. */
  symmetric: boolean;
  /** What each STUN port saw, in the order of `serverPorts`. */
  observed: readonly StunAddress[];
}

/**
 * Discovers the public mapping of the WireGuard port while WireGuard owns it.
 * The probe has a socket of its own, and an nftables SNAT (table
 * `ip fleetplane_stun`) makes its packets to the STUN server leave from the
 * WireGuard port; conntrack returns the answers to the probe socket. Keep one
 * probe open for as long as WireGuard runs and call `discover()` again to
 * re-check: a new probe socket must first wait out (or, with `conntrack`,
 * delete) the flows of the previous one. IPv4 only.
 */
export class WireguardPortProbe {
  private constructor(
    private readonly socket: Socket,
    private readonly rule: PortSnatRule,
    private readonly opts: WireguardPortProbeOptions,
  ) {}

  /** Binds the probe socket and installs its SNAT. */
  static async open(opts: WireguardPortProbeOptions): Promise<WireguardPortProbe> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // After bind, a socket error is logged: the next discover() fails and says why.
    socket.on('error', (err) => opts.logger.warn({ err }, 'STUN probe socket error'));
    const rule: PortSnatRule = { probePort: socket.address().port, wireguardPort: opts.wireguardPort, server: opts.server, serverPorts: opts.serverPorts };
    try {
      if (!(await forgetProbeFlows(opts.runner, rule))) {
        opts.logger.warn('conntrack is not installed: a STUN probe right after an agent restart may time out until the previous probe flows expire');
      }
      await applyPortSnat(opts.runner, rule);
    } catch (err) {
      socket.close();
      throw err;
    }
    return new WireguardPortProbe(socket, rule, opts);
  }

  /** Asks both STUN ports (one after the other) for the WireGuard port's mapping. Rejects when either does not answer. */
  async discover(signal?: AbortSignal): Promise<NatMapping> {
    const observed: StunAddress[] = [];
    for (const port of this.opts.serverPorts) {
      observed.push(await bindingRequest(this.socket, this.opts.server, port, { ...this.opts.binding, signal }));
    }
    const [first] = observed;
    if (!first) throw new Error('no STUN ports to ask');
    const symmetric = observed.some((a) => a.address !== first.address || a.port !== first.port);
    const mapping: NatMapping = { endpoint: formatStunAddress(first), symmetric, observed };
    this.opts.logger.debug({ ...mapping, observed: observed.map(formatStunAddress) }, 'STUN mapping of the WireGuard port');
    return mapping;
  }

  /** Removes the SNAT and closes the socket. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
    await removePortSnat(this.opts.runner);
  }

  /** The local port of the probe socket (what the SNAT matches). */
  get probePort(): number {
    return this.rule.probePort;
  }
}
