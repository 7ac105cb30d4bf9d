/**
 * Whether the agent runs STUN, and against which server: the host of its
 * server URL with the default ports unless `--stun-server`/`--stun-port`/
 * `--stun-alt-port` say otherwise; never with `--stun=false`, nor without a
 * WireGuard port of its own (the render dataplane) or nftables to steer the
 * probe onto it.
 */
import type { Logger } from 'pino';
import type { Dataplane } from '../dataplane/index.js';
import type { AgentOptions } from '../options.js';
import { NatDiscovery } from './nat-discovery.js';
import type { StunState } from './stun-state.js';

export type StunSettings = Pick<AgentOptions, 'stun' | 'stunServer' | 'stunPort' | 'stunAltPort' | 'stunIntervalMs' | 'listenPort'>;

/**
 * A NatDiscovery for this agent, or undefined when STUN is off here (logged
 * once at info, with the reason). `server` is the agent's server URL.
 */
export function setUpStun(
  o: StunSettings,
  server: string,
  dataplane: Dataplane,
  logger: Logger,
  onChange: (state: StunState) => void,
): NatDiscovery | undefined {
  if (!o.stun) {
    logger.info('STUN is off (--stun=false): no stun endpoint is published');
    return undefined;
  }
  if (dataplane.mode !== 'linux') {
    logger.info({ dataplane: dataplane.mode }, 'STUN is off: it needs the WireGuard port and nftables of --dataplane linux');
    return undefined;
  }
  // URL.hostname keeps an IPv6 literal's brackets; the probe is IPv4 only, so such a host can't be used.
  const host = o.stunServer ?? new URL(server).hostname;
  if (host.startsWith('[')) {
    logger.info({ server }, 'STUN is off: the server is an IPv6 address and the probe speaks IPv4 (set --stun-server)');
    return undefined;
  }
  return new NatDiscovery({
    host,
    ports: [o.stunPort, o.stunAltPort],
    wireguardPort: o.listenPort,
    intervalMs: o.stunIntervalMs,
    logger,
    onChange,
  });
}
