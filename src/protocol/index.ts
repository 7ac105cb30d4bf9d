/**
 * The wire contract shared by server, SDK, agent, CLI and tests
 * (docs/protocol.md). Browser-safe: no Node built-ins.
 */
export * from './errors.js';
export * from './headers.js';
export * from './bearer.js';
export * from './paths.js';
export * from './ip.js';
export * from './formats.js';
export * from './watch.js';
export * from './watch-line.js';
export * from './page.js';
export * from './tunnel.js';
export * from './keepalive.js';
export * from './tunnel-frames.js';
export * from './agent-local.js';
export * from './sync.js';
export * from './bus.js';
export * from './stun.js';
export * from './relay.js';
export * from './references.js';
export * from './schemas/common.js';
export * from './schemas/organization.js';
export * from './schemas/device.js';
export * from './schemas/security-group.js';
export * from './schemas/credentials.js';
export * from './schemas/members.js';
export * from './schemas/api-keys.js';
export * from './schemas/auth.js';
export * from './schemas/device-tokens.js';
export * from './schemas/audit.js';
export * from './schemas/audit-changes.js';
export * from './schemas/fleet.js';
export * from './schemas/agent-rpc.js';
export * from './schemas/watch-events.js';
export * from './schemas/relay.js';
export * from './schemas/policy.js';
