import type { Database } from '../db/index.js';
import type { InvitationCreate, MemberRole } from '../../protocol/index.js';
import * as members from './members.js';
import * as invitations from './invitations.js';
import * as memberWrites from './member-writes.js';

/**
 * Users' membership of organizations, and invitations to join one.
 * Members are bound, so they may be passed as callbacks.
 */
export class MemberRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** A user's role in an organization now, undefined: not a member (the access module asks once per request; never cached). */
  role = (orgId: string, userId: string) => members.memberRole(this.#db, orgId, userId);
  list = (orgId: string) => members.listMembers(this.#db, orgId);
  /** The organizations a user is a member of, or only those of them in `only`. */
  organizationsOf = (userId: string, only?: readonly string[]) => members.listUserOrganizations(this.#db, userId, only);
  /** 404 when not a member, 403 when `scope` may not touch owners, 409 when it would leave no owner. */
  setRole = (orgId: string, userId: string, role: MemberRole, scope: members.MemberChangeScope) =>
    memberWrites.setMemberRole(this.#db, orgId, userId, role, scope);
  /** 404 when not a member, 403 when `scope` may not touch owners, 409 when it would leave no owner. */
  remove = (orgId: string, userId: string, scope: members.MemberChangeScope) => memberWrites.removeMember(this.#db, orgId, userId, scope);

  /** `createdBy`: the inviting user. */
  createInvitation = (orgId: string, input: InvitationCreate, createdBy: string) => memberWrites.createInvitation(this.#db, orgId, input, createdBy);
  listInvitations = (orgId: string) => invitations.listInvitations(this.#db, orgId);
  /** Revokes an open invitation: 404 when there is none, 403 for an owner invitation when `scope.owners` is false. */
  revokeInvitation = (orgId: string, id: string, scope: { owners: boolean }) => memberWrites.revokeInvitation(this.#db, orgId, id, scope);
}
