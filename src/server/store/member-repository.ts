import type { Database } from '../db/index.js';
import type { InvitationCreate, Member, MemberRole } from '../../protocol/index.js';
import type { TokenIndex } from './token-index.js';
import { afterCommit } from './token-index-change.js';
import * as members from './members.js';
import * as invitations from './invitations.js';
import * as memberWrites from './member-writes.js';

/**
 * Users' membership of organizations, and invitations to join one.
 * Members are bound, so they may be passed as callbacks.
 */
export class MemberRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly tokens: TokenIndex,
  ) {
    this.#db = db;
  }

  /** A user's role in an organization now, undefined: not a member (the access module asks once per request; never cached). */
  role = (orgId: string, userId: string) => members.memberRole(this.#db, orgId, userId);
  list = (orgId: string) => members.listMembers(this.#db, orgId);
  /** The organizations a user is a member of, or only those of them in `only`. */
  organizationsOf = (userId: string, only?: readonly string[]) => members.listUserOrganizations(this.#db, userId, only);
  /**
   * 404 when not a member, 403 when `scope` may not touch owners, 409 when it
   * would leave no owner. Demoted to `read`, what rests on the member there is revoked.
   */
  setRole = async (orgId: string, userId: string, role: MemberRole, scope: members.MemberChangeScope): Promise<Member> => {
    const { member } = await afterCommit(this.tokens, memberWrites.setMemberRole(this.#db, orgId, userId, role, scope), ({ revoked }) => ({ revoked }));
    return member;
  };
  /**
   * 404 when not a member, 403 when `scope` may not touch owners, 409 when it
   * would leave no owner. What rests on the member there is revoked with it.
   */
  remove = async (orgId: string, userId: string, scope: members.MemberChangeScope): Promise<void> => {
    await afterCommit(this.tokens, memberWrites.removeMember(this.#db, orgId, userId, scope), (revoked) => ({ revoked }));
  };

  /** `createdBy`: who invites (`user:<id>`, `token:<id>`, `admin`). With neither email nor subject, the result carries its token. */
  createInvitation = (orgId: string, input: InvitationCreate, createdBy: string) => memberWrites.createInvitation(this.#db, orgId, input, createdBy);
  listInvitations = (orgId: string) => invitations.listInvitations(this.#db, orgId);
  /** A signed-in user claims an invitation by its token: it becomes a member (404 when no open invitation has it). */
  acceptInvitation = (token: string, userId: string) => memberWrites.acceptInvitationToken(this.#db, token, userId);
  /** Revokes an open invitation: 404 when there is none, 403 for an owner invitation when `scope.owners` is false. */
  revokeInvitation = (orgId: string, id: string, scope: { owners: boolean }) => memberWrites.revokeInvitation(this.#db, orgId, id, scope);
}
