/** Who may do what, at every entry point: principals, the rule table, and revocations. */
export { Access, type AccessOptions, type TunnelPrincipal } from './access.js';
export { bearerSecret } from './bearer.js';
export { decide, ruleFor, type Target } from './decide.js';
export { kindOf, orgOf, revocableTokenOf, PRINCIPAL_KINDS, type Principal, type PrincipalKind, type ReplicaPrincipal } from './principal.js';
export { authorizePrivate } from './private-principal.js';
export { PRIVATE_TOKEN_LIFETIME_S, privateKey, signPrivateToken, type PrivateGrant } from './private-token.js';
export { RevocationFollower } from './revocation-follower.js';
export { guardRoutes } from './route-guard.js';
export { ACCESS_RULES, REFUSALS, type AccessRule, type Entry, type Grant, type RuleMethod } from './rules.js';
