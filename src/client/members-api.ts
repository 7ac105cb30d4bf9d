import { paths, type CreatedInvitation, type Invitation, type InvitationCreate, type Member, type MemberRole } from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { isRecord, listOf } from './guards.js';
import type { HttpTransport } from './http-transport.js';

const isMember = (v: unknown): v is Member => isRecord(v) && typeof v['user_id'] === 'string' && typeof v['role'] === 'string';
const isInvitation = (v: unknown): v is Invitation => isRecord(v) && typeof v['id'] === 'string' && typeof v['role'] === 'string';

/**
 * `/api/organizations/{org}/members[/{user}]` and `.../invitations[/{id}]`
 * (docs/protocol.md "Members and roles"). A change that would leave the
 * organization without an owner fails with ConflictError; an admin touching
 * owners with ForbiddenError.
 */
export class MembersApi {
  constructor(private readonly transport: HttpTransport) {}

  async list(org: string, opts: CallOptions = {}): Promise<Member[]> {
    const body = await this.transport.json({ method: 'GET', path: paths.members(org), signal: opts.signal }, listOf(isMember), 'a list of members');
    return body.items;
  }

  setRole(org: string, user: string, role: MemberRole, opts: CallOptions = {}): Promise<Member> {
    return this.transport.json({ method: 'PATCH', path: paths.member(org, user), body: { role }, signal: opts.signal }, isMember, 'the member');
  }

  async remove(org: string, user: string, opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.member(org, user), signal: opts.signal });
  }

  /** Invites by email or subject; with neither, the answer carries the invitation's `token` (shown once). */
  invite(org: string, body: InvitationCreate, opts: CallOptions = {}): Promise<CreatedInvitation> {
    return this.transport.json({ method: 'POST', path: paths.invitations(org), body, signal: opts.signal }, isInvitation, 'the invitation');
  }

  /** A signed-in user (a session) accepts an invitation by its token and becomes a member; NotFoundError when no open one has it. */
  acceptInvitation(token: string, opts: CallOptions = {}): Promise<Member> {
    return this.transport.json({ method: 'POST', path: paths.acceptInvitation(), body: { token }, signal: opts.signal }, isMember, 'the membership');
  }

  /** The open invitations (not accepted, revoked or expired). */
  async invitations(org: string, opts: CallOptions = {}): Promise<Invitation[]> {
    const body = await this.transport.json(
      { method: 'GET', path: paths.invitations(org), signal: opts.signal },
      listOf(isInvitation),
      'a list of invitations',
    );
    return body.items;
  }

  async revokeInvitation(org: string, id: string, opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.invitation(org, id), signal: opts.signal });
  }
}
