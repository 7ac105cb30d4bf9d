/** Who may do what, at every entry point: resolving principals, the rule table, and revocations. */
export { Access, isOperator, type DeviceUpgradeRoute, type TunnelPrincipal } from './access.js';
export { PRINCIPAL_KINDS, type PrincipalKind } from './principal-kind.js';
export { authorizePrivate, authorizeRelayLink } from './private-principal.js';
export { privateKey, signPrivateToken, signRelayLinkToken } from './private-token.js';
export { RevocationFollower } from './revocation-follower.js';
export { guardRoutes } from './route-guard.js';
export { ACCESS_RULES, type AccessRule, type Grant } from './rules.js';
