import type { Database } from '../db/index.js';
import type { ApiKeyCreate, InvitationCreate, MemberRole } from '../../protocol/index.js';
import { recordAudit } from '../audit/record.js';
import * as apiKeys from './api-keys.js';
import * as invitations from './invitations.js';
import * as members from './members.js';
import { endMadeBy, endMadeByMember } from './makers.js';

/**
 * The writes of members, invitations and API keys, each in one transaction
 * with its audit entry (docs/protocol.md "Audit log"). API keys belong to no
 * organization's log: their entries have no organization.
 */

/**
 * Changes a member's role. Demoted to `read`, the member may no longer mint
 * credentials: what rests on its authority there is revoked with the change
 * (`revoked`: the token ids). Made the first owner, the admin token's owner
 * invitations claimed by token end (invitations.endOwnerStandIns).
 */
export function setMemberRole(db: Database, orgId: string, userId: string, role: MemberRole, scope: members.MemberChangeScope) {
  return db.transaction(async (tx) => {
    const { member, was } = await members.setMemberRole(tx, orgId, userId, role, scope);
    const changes = was === role ? {} : { fields: ['role'], changes: { role: { from: was, to: role } } };
    await recordAudit(tx, { orgId, action: 'update', kind: 'member', objectId: userId, objectName: members.memberName(member), details: { role, ...changes } });
    if (role === 'owner' && was !== 'owner') await invitations.endOwnerStandIns(tx, orgId, userId);
    const revoked = role === 'read' ? await endMadeByMember(tx, orgId, userId, 'demoted') : [];
    return { member, revoked };
  });
}

/** Removes a member, and what rests on its authority there, in one transaction; returns the token ids revoked. */
export function removeMember(db: Database, orgId: string, userId: string, scope: members.MemberChangeScope): Promise<string[]> {
  return db.transaction(async (tx) => {
    const removed = await members.removeMember(tx, orgId, userId, scope);
    await recordAudit(tx, { orgId, action: 'delete', kind: 'member', objectId: userId, objectName: members.memberName(removed) });
    return endMadeByMember(tx, orgId, userId, 'removed');
  });
}

export function createInvitation(db: Database, orgId: string, input: InvitationCreate, createdBy: string) {
  return db.transaction(async (tx) => {
    const created = await invitations.createInvitation(tx, orgId, input, createdBy);
    await recordAudit(tx, { orgId, action: 'create', kind: 'invitation', objectId: created.id, objectName: invitations.invitationName(created), details: { role: created.role } });
    return created;
  });
}

/** A signed-in user claims an invitation by its token (404 when no open one has it). */
export function acceptInvitationToken(db: Database, token: string, userId: string) {
  return db.transaction(async (tx) => (await invitations.acceptInvitationToken(tx, token, userId)).member);
}

export function revokeInvitation(db: Database, orgId: string, id: string, scope: { owners: boolean }) {
  return db.transaction(async (tx) => {
    const revoked = await invitations.revokeInvitation(tx, orgId, id, scope);
    await recordAudit(tx, { orgId, action: 'revoke', kind: 'invitation', objectId: id, objectName: invitations.invitationName(revoked) });
  });
}

export function createApiKey(db: Database, userId: string, input: ApiKeyCreate) {
  return db.transaction(async (tx) => {
    const made = await apiKeys.createApiKey(tx, userId, input);
    await recordAudit(tx, { orgId: null, action: 'create', kind: 'api_key', objectId: made.created.id, objectName: made.created.description, details: { role: made.created.role } });
    return made;
  });
}

/** Revokes an API key and what it made (keys made credentials before they were refused that); returns every token id revoked. */
export function revokeApiKey(db: Database, userId: string, id: string): Promise<string[]> {
  return db.transaction(async (tx) => {
    const revoked = await apiKeys.revokeApiKey(tx, userId, id);
    await recordAudit(tx, { orgId: null, action: 'revoke', kind: 'api_key', objectId: id, objectName: revoked.description });
    return [id, ...(await endMadeBy(tx, [id], { kind: 'api_key', id }))];
  });
}
