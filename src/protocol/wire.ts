/**
 * The wire contract without its TypeBox schemas: every constant, helper and
 * type of index.ts, for code that never checks a body against a schema (the
 * SDK, the dashboard). The types of schema-defined bodies come type-only, so
 * nothing this module loads imports @sinclair/typebox; a page that bundles it
 * ships no schemas (test/dashboard/bundle-schema-free.test.ts). Browser-safe:
 * no Node built-ins.
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
export * from './organization.js';
export * from './device.js';
export * from './security-group.js';
export * from './credentials.js';
export * from './members.js';
export * from './api-keys.js';
export * from './auth.js';
export * from './device-tokens.js';
export * from './audit.js';
export * from './audit-changes.js';
export * from './convergence.js';
export * from './policy.js';
export type * from './schemas/common.js';
export type * from './schemas/watch-request.js';
export type * from './schemas/page-request.js';
export type * from './schemas/organization.js';
export type * from './schemas/device.js';
export type * from './schemas/security-group.js';
export type * from './schemas/credentials.js';
export type * from './schemas/members.js';
export type * from './schemas/api-keys.js';
export type * from './schemas/auth.js';
export type * from './schemas/device-tokens.js';
export type * from './schemas/audit.js';
export type * from './schemas/fleet.js';
export type * from './schemas/agent-rpc.js';
export type * from './schemas/watch-events.js';
export type * from './schemas/relay.js';
export type * from './schemas/policy.js';
