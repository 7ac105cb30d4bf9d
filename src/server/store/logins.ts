import type { Database } from '../db/index.js';
import type { CreatedSession, Session, User } from '../../protocol/index.js';
import { recordAudit } from '../audit/index.js';
import { acceptInvitations } from './invitations.js';
import * as pending from './pending-logins.js';
import * as sessions from './sessions.js';
import { hashSecret } from './secrets.js';
import type { TokenIndex } from './token-index.js';
import { afterCommit } from './token-index-change.js';
import { endMadeBy } from './makers.js';
import { getUser, upsertUser, userName, type BootstrapAdmins, type LoginIdentity } from './users.js';

/** How a login's session is made. */
export interface SessionTerms {
  ttlSeconds: number;
  maxAgeSeconds: number;
  source: string | undefined;
  userAgent: string | undefined;
  description: string;
}

/**
 * Users, their sessions and pending logins (docs/protocol.md "Users and
 * login"). Sessions are `tokens` rows: this keeps the token index in step on
 * this replica, after each write committed (afterCommit); other replicas learn of revocations through the revocation
 * follower and of refreshes by looking a session up again once its cached
 * expiry passed (CredentialRepository.authenticate).
 */
export class Logins {
  constructor(
    private readonly db: Database,
    private readonly tokens: TokenIndex,
  ) {}

  /**
   * A finished login, in one transaction: the user is created or updated
   * (server admin at first login when `admins` names it), the invitations
   * matching it are accepted, and a session is made; the audit log gets the
   * user's creation and the session, with the user as the actor. Runs in an
   * audit scope (the login route's: its address and user agent).
   */
  async signIn(identity: LoginIdentity, admins: BootstrapAdmins, terms: SessionTerms): Promise<CreatedSession & { invitationsAccepted: number }> {
    const signIn = this.db.transaction(async (tx) => {
      const { user, created: isNew } = await upsertUser(tx, identity, admins);
      const created = await sessions.createSession(tx, { userId: user.id, ...terms });
      // The login's credential is the session it creates: the user is the actor of its own sign-in.
      const actor = { type: 'user', id: user.id, credentialId: created.session.id } as const;
      const invitationsAccepted = await acceptInvitations(
        tx,
        { id: user.id, email: identity.email ?? null, emailVerified: identity.emailVerified, subject: identity.subject },
        actor,
      );
      if (isNew) await recordAudit(tx, { orgId: null, action: 'create', kind: 'user', objectId: user.id, objectName: userName(user), actor });
      await recordAudit(tx, { orgId: null, action: 'create', kind: 'session', objectId: created.session.id, objectName: created.session.description, actor, details: { description: terms.description } });
      for (const r of created.revoked) {
        await recordAudit(tx, { orgId: null, action: 'revoke', kind: 'session', objectId: r.id, objectName: r.description, actor, details: { reason: 'session_limit' } });
      }
      const made: string[] = [];
      for (const { id } of created.revoked) made.push(...(await endMadeBy(tx, [id], { kind: 'session', id }, actor)));
      return { user, invitationsAccepted, ...created, revoked: [...created.revoked.map((r) => r.id), ...made] };
    });
    const done = await afterCommit(this.tokens, signIn, (d) => ({
      revoked: d.revoked,
      added: [
        {
          hash: hashSecret(d.token),
          token: {
            principal: { type: 'user', credential: 'session', tokenId: d.session.id, userId: d.user.id, serverAdmin: d.user.server_admin },
            expiresAt: Date.parse(d.session.expires_at),
          },
        },
      ],
    }));
    return { token: done.token, session: done.session, user: done.user, invitationsAccepted: done.invitationsAccepted };
  }

  getUser = (id: string): Promise<User | undefined> => getUser(this.db, id);
  getSession = (id: string, userId?: string): Promise<Session | undefined> => sessions.getSession(this.db, id, userId);
  listSessions = (userId: string): Promise<Session[]> => sessions.listSessions(this.db, userId);

  /** See sessions.refreshSession; the index learns the new idle end at once on this replica. */
  refreshSession(id: string, ttlSeconds: number): Promise<Session | undefined> {
    const refresh = this.db.transaction(async (tx) => {
      const refreshed = await sessions.refreshSession(tx, id, ttlSeconds);
      if (refreshed) await recordAudit(tx, { orgId: null, action: 'renew', kind: 'session', objectId: id, objectName: refreshed.description, details: { expires_at: refreshed.expires_at } });
      return refreshed;
    });
    return afterCommit(this.tokens, refresh, (session) => ({ extended: session ? [{ tokenId: id, expiresAt: Date.parse(session.expires_at) }] : [] }));
  }

  /** Revokes a session and what it made; their streams and tunnels end through the revocation follower. */
  async revokeSession(userId: string, id: string): Promise<void> {
    const revoke = this.db.transaction(async (tx) => {
      const revoked = await sessions.revokeSession(tx, userId, id);
      await recordAudit(tx, { orgId: null, action: 'revoke', kind: 'session', objectId: id, objectName: revoked.description, details: { user_id: userId } });
      return [id, ...(await endMadeBy(tx, [id], { kind: 'session', id }))];
    });
    await afterCommit(this.tokens, revoke, (revoked) => ({ revoked }));
  }

  createPendingLogin = <K extends pending.PendingKind>(kind: K, source: string, data: K extends 'browser' ? pending.BrowserLoginData : pending.DeviceLoginData, ttlSeconds: number) =>
    pending.createPendingLogin(this.db, kind, source, data, ttlSeconds);
  takeBrowserLogin = (handle: string) => pending.takePendingLogin(this.db, 'browser', handle);
  claimDevicePoll = (handle: string) => pending.claimDevicePoll(this.db, handle);
  slowDownDeviceLogin = (handle: string) => pending.slowDownDeviceLogin(this.db, handle);
  deletePendingLogin = (handle: string) => pending.deletePendingLogin(this.db, handle);
}
