import type { CommandRunner } from '../dataplane/index.js';
import { CommandError } from '../dataplane/index.js';

/** The nftables table holding the probe's SNAT; apart from the dataplane's `inet fleetplane`, which it replaces whole. */
export const PROBE_TABLE = 'fleetplane_stun';

export interface PortSnatRule {
  /** Local UDP port of the probe socket. */
  probePort: number;
  /** The WireGuard listen port the probe's packets leave from. */
  wireguardPort: number;
  /** The STUN server (IPv4) and its ports. */
  server: string;
  serverPorts: readonly number[];
}

/**
 * The ruleset that makes the probe's packets to the STUN server leave from
 * the WireGuard port, so the NAT maps them as it maps WireGuard's own; the
 * replies come back to the WireGuard port and conntrack hands them to the
 * probe socket, not to WireGuard (docs/protocol.md "STUN").
 */
export function renderPortSnat(rule: PortSnatRule): string {
  const ports = rule.serverPorts.join(', ');
  return `table ip ${PROBE_TABLE} {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    ip daddr ${rule.server} udp sport ${rule.probePort} udp dport { ${ports} } snat to :${rule.wireguardPort}
  }
}
`;
}

/** Installs (replacing any earlier one) the probe's SNAT table through `nft`. */
export async function applyPortSnat(runner: CommandRunner, rule: PortSnatRule): Promise<void> {
  await removePortSnat(runner);
  await runner.run('nft', ['-f', '-'], { input: renderPortSnat(rule) });
}

/** Removes the probe's SNAT table; absent already is fine. */
export async function removePortSnat(runner: CommandRunner): Promise<void> {
  try {
    await runner.run('nft', ['delete', 'table', 'ip', PROBE_TABLE]);
  } catch (err) {
    if (!(err instanceof CommandError) || !/No such file or directory|does not exist/i.test(err.message)) throw err;
  }
}

/**
 * Forgets conntrack's flows from the WireGuard port to the STUN server left
 * by an earlier probe socket: while one lives, a new probe socket's packets
 * would need the same translated tuple and are dropped (measured). Needs
 * `conntrack`; false when it is not installed (such a flow ends by itself
 * within conntrack's UDP timeout, 30 to 120 s).
 */
export async function forgetProbeFlows(runner: CommandRunner, rule: PortSnatRule): Promise<boolean> {
  for (const port of rule.serverPorts) {
    const args = ['-D', '-p', 'udp', '-d', rule.server, '--dport', String(port), '--reply-port-dst', String(rule.wireguardPort)];
    try {
      await runner.run('conntrack', args);
    } catch (err) {
      if (!(err instanceof CommandError)) throw err;
      // Exit 1 with "0 flow entries": nothing to forget.
      if (/0 flow entries/.test(err.message)) continue;
      // Only a missing binary means "no conntrack here"; a timeout or an abort (also exitCode null) is a failure.
      const code = err.cause instanceof Error && 'code' in err.cause ? err.cause.code : undefined;
      if (code === 'ENOENT' || /ENOENT|not found/i.test(err.message)) return false;
      throw err;
    }
  }
  return true;
}
