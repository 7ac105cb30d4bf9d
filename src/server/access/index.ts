/** Who may do what, at every entry point: principals, the rule table, and revocations. */
export { Access, isOperator, type TunnelPrincipal } from './access.js';
export { actorOf, SYSTEM_ACTOR, type Actor } from './actor.js';
export { revocableTokenOf, PRINCIPAL_KINDS, type PrincipalKind } from './principal.js';
export { authorizePrivate } from './private-principal.js';
export { privateKey, signPrivateToken } from './private-token.js';
export { RevocationFollower } from './revocation-follower.js';
export { guardRoutes } from './route-guard.js';
export { ACCESS_RULES, type AccessRule, type Grant } from './rules.js';
