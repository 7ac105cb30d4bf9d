/**
 * NAT discovery for the agent (docs/protocol.md "STUN"): the public mapping
 * of the WireGuard port, learnt from the server's two STUN ports through an
 * nftables SNAT of the probe onto that port, and whether the NAT is
 * symmetric; and the loop that keeps it current for the agent.
 */
export { bindingRequest, StunTimeoutError, type BindingOptions } from './stun-client.js';
export { applyPortSnat, forgetProbeFlows, removePortSnat, renderPortSnat, PROBE_TABLE, type PortSnatRule } from './port-snat.js';
export { WireguardPortProbe, type NatMapping, type WireguardPortProbeOptions } from './wireguard-port-probe.js';
export { NatDiscovery, type NatDiscoveryOptions, type PortProbe } from './nat-discovery.js';
export { setUpStun, type StunSettings } from './stun-setup.js';
export { sameStunState, type StunState } from './stun-state.js';
