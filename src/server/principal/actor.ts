import type { AuditActorType } from '../../protocol/index.js';
import type { Principal } from './principal.js';

/**
 * Who an audit entry names (docs/protocol.md "Audit log"): the kind of
 * principal, its id (the device, user, token or key; null for the admin
 * token and the server) and the credential it used (null where the id is
 * the credential or there is none).
 */
export interface Actor {
  readonly type: AuditActorType;
  readonly id: string | null;
  readonly credentialId: string | null;
}

/** The server itself (background work such as the ephemeral collector). */
export const SYSTEM_ACTOR: Actor = { type: 'system', id: null, credentialId: null };

/** The audit actor of a resolved principal. */
export function actorOf(p: Principal): Actor {
  switch (p.type) {
    case 'admin':
      return { type: 'admin', id: null, credentialId: null };
    case 'org':
      return { type: 'token', id: p.tokenId, credentialId: p.tokenId };
    case 'device':
      return { type: 'device', id: p.deviceId, credentialId: p.tokenId };
    case 'registration':
      return { type: 'registration_key', id: p.keyId, credentialId: p.keyId };
    case 'user':
      return p.credential === 'session'
        ? { type: 'user', id: p.userId, credentialId: p.tokenId }
        : { type: 'api_key', id: p.userId, credentialId: p.tokenId };
    case 'replica':
      return { type: 'replica', id: null, credentialId: null };
  }
}
