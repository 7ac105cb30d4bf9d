/**
 * Who makes a call (a resolved credential) and who an audit entry names.
 * A leaf: it imports only the protocol, so the store, the audit log and the
 * access module can all name a principal without importing one another.
 */
export {
  orgOf,
  revocableTokenOf,
  type ApiKeyPrincipal,
  type Principal,
  type RelayLinkPrincipal,
  type ReplicaPrincipal,
  type SessionPrincipal,
  type TokenPrincipal,
} from './principal.js';
export { actorOf, SYSTEM_ACTOR, type Actor } from './actor.js';
