/**
 * NAT discovery for the agent (docs/protocol.md "STUN"): the public mapping
 * of the WireGuard port, learnt from the server's two STUN ports through an
 * nftables SNAT of the probe onto that port, and whether the NAT is
 * symmetric; and the loop that keeps it current for the agent.
 */
export { StunTimeoutError } from './stun-client.js';
export { WireguardPortProbe, type NatMapping, type WireguardPortProbeOptions } from './wireguard-port-probe.js';
export { NatDiscovery, type NatDiscoveryOptions, type PortProbe } from './nat-discovery.js';
export { setUpStun, type StunSettings } from './stun-setup.js';
export type { StunState } from './stun-state.js';
