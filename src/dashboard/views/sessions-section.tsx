import type { JSX } from 'preact';
import { USER_SELF, type Session } from '../../protocol/wire.js';
import { Ago, EmptyState, ErrorState } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { ConfirmAction } from '../components/confirm-action.js';
import { useListActions } from './use-list-actions.js';

/**
 * The signed-in user's live sessions (browser, ctl, agent logins), the one
 * this page uses (`current`) marked; Revoke asks first. Revoking the
 * current one signs this page out.
 */
export function SessionsSection(props: { current: string }): JSX.Element {
  const client = useClient();
  const { data: sessions, loadError, error, saved, act } = useListActions(() => client.auth.listSessions(USER_SELF), [client]);
  const revoke = (s: Session): Promise<void> =>
    act(async () => {
      await client.auth.revokeSession(USER_SELF, s.id);
      return `Revoked the ${s.description} session from ${s.source ?? 'an unknown address'}`;
    });
  const now = Date.now();
  return (
    <section aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      {error ? <ErrorState error={error} title="Not revoked" /> : null}
      {saved ? (
        <p class="banner ok" role="status" data-testid="sessions-saved">
          {saved}
        </p>
      ) : null}
      {loadError ? <ErrorState error={loadError} title="Could not list your sessions" /> : null}
      {sessions?.length === 0 ? <EmptyState title="No live sessions" /> : null}
      {sessions && sessions.length > 0 ? (
        <table class="panel" data-testid="sessions-table">
          <thead>
            <tr><th scope="col">Client</th><th scope="col">From</th><th scope="col">Signed in</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {sessions.map((s) => {
              const current = s.id === props.current;
              return (
                <tr key={s.id} data-testid="session-row" data-session-id={s.id} data-current={current ? 'true' : undefined}>
                  <td>
                    {s.description} {current ? <span class="tag ok" data-testid="session-current">this browser</span> : null}
                  </td>
                  <td>
                    {s.source ?? <span class="muted">unknown</span>}
                    {s.user_agent ? <div class="muted">{s.user_agent}</div> : null}
                  </td>
                  <td><Ago at={s.created_at} now={now} /></td>
                  <td><Ago at={s.last_used_at} now={now} /></td>
                  <td>{s.expires_at}</td>
                  <td>
                    <ConfirmAction
                      testId="session-revoke"
                      opener="Revoke…"
                      action="Revoke"
                      label="Confirm revoking this session"
                      question={current ? 'Revoke this browser’s session? This page signs out.' : 'Revoke this session? It is signed out at once.'}
                      onConfirm={() => void revoke(s)}
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
