import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { MEMBER_ROLES, type InvitationCreate, type MemberRole } from '../../protocol/wire.js';
import { EmptyState, ErrorState, FieldError, SecretOnce, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { ConfirmAction } from '../components/confirm-action.js';
import { useListActions } from './use-list-actions.js';

type Invitee = 'email' | 'subject' | 'token';
const INVITEES: readonly { value: Invitee; label: string }[] = [
  { value: 'email', label: 'Email (a verified email at the identity provider)' },
  { value: 'subject', label: 'Subject (the identity provider’s user id)' },
  { value: 'token', label: 'Anyone with the invitation token' },
];

/** Fields whose server errors this form shows at the field; any other shows above the list. */
const FIELD_PATHS = ['/email', '/subject', '/role'];

/**
 * An organization's open invitations (the server's list: pending only), a
 * form to invite (by email, by subject, or by a token that is shown once)
 * and Revoke, which asks first. The list is read again when
 * `membersChanged` changes (a member's change may end invitations). A
 * credential that may not see invitations (a read token) sees the server's
 * refusal here, not a broken page.
 */
export function InvitationsSection(props: { org: string; membersChanged: number }): JSX.Element {
  const client = useClient();
  const { data: items, loadError, error, saved, act } = useListActions(() => client.members.invitations(props.org), [client, props.org, props.membersChanged]);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [invitee, setInvitee] = useState<Invitee>('email');
  const [value, setValue] = useState('');
  const [role, setRole] = useState<MemberRole>('read');
  const invite = (e: Event): void => {
    e.preventDefault();
    const body: InvitationCreate = { role };
    if (invitee === 'email') body.email = value.trim();
    if (invitee === 'subject') body.subject = value.trim();
    void act(async () => {
      const created = await client.members.invite(props.org, body);
      if (created.token !== undefined) setSecret(created.token);
      setValue('');
      return `Invited ${created.email ?? created.subject ?? 'by token'} as ${created.role}`;
    });
  };
  const unplaced = error !== undefined && !FIELD_PATHS.some((p) => fieldError(error, p) !== undefined);
  return (
    <section aria-labelledby="invitations-title">
      <h2 id="invitations-title">Invitations</h2>
      {secret ? (
        <SecretOnce
          label="Invitation token (the invitee signs in and accepts it: fleetplane ctl invitations accept TOKEN)"
          secret={secret}
          onDone={() => setSecret(undefined)}
        />
      ) : null}
      <form class="panel toolbar" onSubmit={invite} aria-label="Invite">
        <div>
          <label for="invite-kind">Invite by</label>
          <select id="invite-kind" data-testid="invite-kind" value={invitee} onChange={(e) => setInvitee(e.currentTarget.value as Invitee)}>
            {INVITEES.map((i) => <option key={i.value} value={i.value}>{i.label}</option>)}
          </select>
        </div>
        {invitee === 'token' ? null : (
          <div>
            <label for="invite-value">{invitee === 'email' ? 'Email' : 'Subject'}</label>
            <input id="invite-value" data-testid="invite-value" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
            <FieldError error={error} path={`/${invitee}`} />
          </div>
        )}
        <div>
          <label for="invite-role">Role</label>
          <select id="invite-role" data-testid="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value as MemberRole)}>
            {MEMBER_ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
          <FieldError error={error} path="/role" />
        </div>
        <button type="submit" class="primary" data-testid="invite-submit">Invite</button>
      </form>
      {unplaced ? <ErrorState error={error} title="Not saved" /> : null}
      {saved ? (
        <p class="banner ok" role="status" data-testid="invitations-saved">
          {saved}
        </p>
      ) : null}
      {loadError ? <ErrorState error={loadError} title="Could not list the invitations" /> : null}
      {items?.length === 0 ? <EmptyState title="No open invitations" /> : null}
      {items && items.length > 0 ? (
        <table class="panel" data-testid="invitations-table">
          <thead>
            <tr><th scope="col">Invitee</th><th scope="col">Role</th><th scope="col">Invited by</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {items.map((i) => {
              const name = i.email ?? i.subject ?? 'whoever holds the token';
              return (
                <tr key={i.id} data-testid="invitation-row" data-invitation-id={i.id}>
                  <td>{i.email ?? i.subject ?? <span class="muted">by token</span>}</td>
                  <td>{i.role}</td>
                  <td>{i.created_by}</td>
                  <td>{i.expires_at}</td>
                  <td>
                    <ConfirmAction
                      testId="invitation-revoke"
                      opener="Revoke…"
                      action="Revoke"
                      label={`Confirm revoking the invitation of ${name}`}
                      question={`Revoke the invitation of ${name}?`}
                      onConfirm={() => void act(async () => { await client.members.revokeInvitation(props.org, i.id); return `Revoked the invitation of ${name}`; })}
                    />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
