import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { MEMBER_ROLES, type Member, type MemberRole } from '../../protocol/wire.js';
import { EmptyState, ErrorState } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { InvitationsSection } from './invitations-section.js';
import { ConfirmAction } from '../components/confirm-action.js';

/** What the last change said: shown above the table until the next one. */
type Outcome = { ok: true; what: string } | { ok: false; error: unknown } | undefined;

const who = (m: Member): string => m.name ?? m.email ?? m.user_id;

/**
 * An organization's members (name, email, role) and its open invitations.
 * A member's role changes with its select and Save (the view says what it
 * saved, or the server's words); removing one asks first. A credential that
 * may not (a read token on changes, say) sees the server's refusal, and the
 * rest of the view keeps working.
 */
export function MembersView(props: { org: string }): JSX.Element {
  const client = useClient();
  const [members, setMembers] = useState<Member[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [outcome, setOutcome] = useState<Outcome>(undefined);
  // A member's change may end invitations (the first owner ends the admin token's owner invitations): the list is read again after each.
  const [changes, setChanges] = useState(0);
  const load = async (): Promise<void> => {
    try {
      setMembers(await client.members.list(props.org));
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  };
  useEffect(() => {
    setOutcome(undefined);
    void load();
  }, [client, props.org]);
  const act = async (f: () => Promise<void>, what: string): Promise<void> => {
    setOutcome(undefined);
    try {
      await f();
      setOutcome({ ok: true, what });
    } catch (err) {
      setOutcome({ ok: false, error: err });
    }
    setChanges((n) => n + 1);
    await load();
  };
  return (
    <main>
      <h1>Members</h1>
      {loadError ? <ErrorState error={loadError} title="Could not list the members" /> : null}
      {outcome?.ok ? (
        <p class="banner ok" role="status" data-testid="members-saved">
          {outcome.what}
        </p>
      ) : null}
      {outcome && !outcome.ok ? <ErrorState error={outcome.error} title="Not saved" /> : null}
      {members?.length === 0 ? <EmptyState title="No members">Invite someone below; they become a member when they accept.</EmptyState> : null}
      {members && members.length > 0 ? (
        <table class="panel" data-testid="members-table">
          <thead>
            <tr><th scope="col">User</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col"><span class="visually-hidden">Remove</span></th></tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <MemberRow
                key={m.user_id}
                member={m}
                onRole={(role) => act(() => client.members.setRole(props.org, m.user_id, role).then(() => undefined), `Saved: ${who(m)} is now ${role}`)}
                onRemove={() => act(() => client.members.remove(props.org, m.user_id), `Removed ${who(m)}`)}
              />
            ))}
          </tbody>
        </table>
      ) : null}
      <InvitationsSection org={props.org} membersChanged={changes} />
    </main>
  );
}

/** One member: its role select with Save, and Remove that asks first. */
function MemberRow(props: { member: Member; onRole: (role: MemberRole) => Promise<void>; onRemove: () => Promise<void> }): JSX.Element {
  const m = props.member;
  const [role, setRole] = useState<MemberRole>(m.role);
  useEffect(() => setRole(m.role), [m.role]);
  const selectId = `member-role-${m.user_id}`;
  return (
    <tr data-testid="member-row" data-user-id={m.user_id}>
      <td>{m.name ?? <span class="muted">{m.user_id}</span>}</td>
      <td>{m.email ?? <span class="muted">none</span>}</td>
      <td>
        <form
          class="toolbar"
          aria-label={`Role of ${who(m)}`}
          onSubmit={(e) => {
            e.preventDefault();
            void props.onRole(role);
          }}
        >
          <label for={selectId} class="visually-hidden">Role of {who(m)}</label>
          <select id={selectId} data-testid="member-role-select" value={role} onChange={(e) => setRole(e.currentTarget.value as MemberRole)}>
            {MEMBER_ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
          <button type="submit" data-testid="member-role-save" disabled={role === m.role}>Save</button>
        </form>
      </td>
      <td>
        <ConfirmAction
          testId="member-remove"
          opener="Remove…"
          action="Remove"
          label={`Confirm removing ${who(m)}`}
          question={`Remove ${who(m)}? They lose access to this organization at once.`}
          onConfirm={() => void props.onRemove()}
        />
      </td>
    </tr>
  );
}
