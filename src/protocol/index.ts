/**
 * The wire contract shared by server, SDK, agent, CLI and tests
 * (docs/protocol.md): wire.ts (constants, helpers, types) and the TypeBox
 * schemas the server validates with and documents. Code that checks nothing
 * against a schema imports wire.ts, which loads no TypeBox. Browser-safe: no
 * Node built-ins.
 */
export * from './wire.js';
export * from './schemas/common.js';
export * from './schemas/watch-request.js';
export * from './schemas/page-request.js';
export * from './schemas/organization.js';
export * from './schemas/device.js';
export * from './schemas/security-group.js';
export * from './schemas/credentials.js';
export * from './schemas/members.js';
export * from './schemas/api-keys.js';
export * from './schemas/auth.js';
export * from './schemas/device-tokens.js';
export * from './schemas/audit.js';
export * from './schemas/fleet.js';
export * from './schemas/agent-rpc.js';
export * from './schemas/watch-events.js';
export * from './schemas/relay.js';
export * from './schemas/policy.js';
