/**
 * The agent's dataplane: desired state from the organization's objects, and
 * two ways to make a machine reflect it (`render` files, `linux` for real).
 */
export { generateKeyPair, publicKeyFromPrivate, isWireGuardKey, samePrivateKey, InvalidKeyError } from './keys.js';
export type { WireGuardKeyPair } from './keys.js';
export {
  computeDesiredState,
  isInterfaceName,
  DesiredStateError,
  DEFAULT_LISTEN_PORT,
  DEFAULT_PERSISTENT_KEEPALIVE,
} from './desired-state.js';
export type {
  DesiredStateInput,
  DesiredDataplane,
  DesiredInterface,
  DesiredPeer,
  RelayedDevice,
  DesiredRoute,
  DesiredFirewall,
  FirewallRule,
  FirewallProtocol,
  PortRange,
  SkippedItem,
} from './desired-state.js';
export { renderWireGuard, WIREGUARD_CONF_FILE } from './render-wireguard.js';
export { renderNftables, renderNftablesRemoval, NFTABLES_CONF_FILE, NFT_FAMILY, NFT_TABLE } from './render-nftables.js';
export { RenderValueError } from './rendered-text.js';
export { assertOwnTableOnly, ForeignRulesetError } from './nft-own-table.js';
export type { Dataplane, DataplaneMode, ApplyResult, DataplaneDescription, PeerDescription } from './dataplane.js';
export { RenderDataplane } from './render-dataplane.js';
export type { RenderDataplaneOptions } from './render-dataplane.js';
export { LinuxDataplane, ROUTE_PROTO } from './linux-dataplane.js';
export type { LinuxDataplaneOptions, WireGuardBackend } from './linux-dataplane.js';
export type { WgPeerState } from './wg-dump.js';
export { createExecRunner } from './command-runner.js';
export type { CommandRunner, CommandResult, RunOptions, ExecRunnerOptions } from './command-runner.js';
export { CommandError, DataplaneError, DataplaneAbortedError } from './errors.js';
export type { DataplaneStep } from './errors.js';
