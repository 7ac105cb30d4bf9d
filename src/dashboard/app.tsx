import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { FleetplaneClient } from '../client/index.js';
import { equalJitterDelay } from '../util/backoff.js';
import { AccountMenu } from './components/account-menu.js';
import { OrgSwitcher } from './components/org-switcher.js';
import { ErrorState } from './components/ui.js';
import { LiveContext } from './live/context.js';
import { useConvergenceTracker } from './live/convergence-tracker.js';
import { EventFeed } from './live/event-feed.js';
import { connectHub } from './live/hub-channel.js';
import { PageLink, type HubChannel } from './live/page-link.js';
import { href, useRoute, type Route } from './router.js';
import { checkSession, pageClient, type SessionState } from './session.js';
import { AuditView } from './views/audit-view.js';
import { CredentialsView } from './views/credentials-view.js';
import { DeviceView } from './views/device-view.js';
import { DevicesView } from './views/devices-view.js';
import { EventsView } from './views/events-view.js';
import { FleetView } from './views/fleet-view.js';
import { LoginView } from './views/login-view.js';
import { MeView } from './views/me-view.js';
import { MembersView } from './views/members-view.js';
import { OrganizationsView } from './views/organizations-view.js';
import { SecurityGroupsView } from './views/security-groups-view.js';
import { SettingsView } from './views/settings-view.js';

const ENDED = 'Your session ended: the token was revoked or has expired. Sign in again.';
const TABS: readonly { view: Route['view']; label: string }[] = [
  { view: 'fleet', label: 'Overview' },
  { view: 'devices', label: 'Devices' },
  { view: 'security-groups', label: 'Security groups' },
  { view: 'credentials', label: 'Credentials' },
  { view: 'events', label: 'Events' },
  { view: 'audit', label: 'Audit log' },
  { view: 'members', label: 'Members' },
  { view: 'settings', label: 'Settings' },
];

function useTheme(): [string, () => void] {
  const [theme, setTheme] = useState(() => localStorage.getItem('fleetplane.theme') ?? '');
  useEffect(() => {
    if (theme) document.documentElement.dataset['theme'] = theme;
    else delete document.documentElement.dataset['theme'];
  }, [theme]);
  const dark = theme === 'dark' || (theme === '' && matchMedia('(prefers-color-scheme: dark)').matches);
  return [
    dark ? 'dark' : 'light',
    () => {
      const next = dark ? 'light' : 'dark';
      localStorage.setItem('fleetplane.theme', next);
      setTheme(next);
    },
  ];
}

/** The selected organization from the page hub (one page stream for all tabs), shared by its views; left when the organization changes or the session ends. */
function useOrgPage(
  channel: HubChannel,
  org: string | undefined,
  on: boolean,
  onFailed: (error: Error) => void,
  onConnection: (ok: boolean) => void,
): { page: PageLink; events: EventFeed } | undefined {
  const live = useMemo(() => {
    if (!org || !on) return undefined;
    const page = new PageLink(channel, org);
    return { page, events: new EventFeed(page) };
  }, [channel, org, on]);
  useEffect(() => {
    if (!live) return;
    // The stream ends for good on 401/403/404: a revoked token's stream is closed with `forbidden`.
    const offs = [live.page.onFailed((message) => onFailed(new Error(message))), live.page.onConnection(onConnection)];
    return () => {
      for (const off of offs) off();
      live.events.close();
      live.page.close();
    };
  }, [live]);
  return live;
}

export function App(): JSX.Element {
  const route = useRoute();
  const [session, setSession] = useState<SessionState>({ state: 'checking' });
  const [reachable, setReachable] = useState(true);
  const [checkError, setCheckError] = useState<unknown>(undefined);
  const [streamError, setStreamError] = useState<Error | undefined>(undefined);
  const [theme, toggleTheme] = useTheme();
  const client = useMemo(
    () =>
      pageClient(
        () => setSession((s) => (s.state === 'signed-in' ? { state: 'signed-out', reason: ENDED } : s)),
        (ok) => setReachable(ok),
      ),
    [],
  );
  const hub = useMemo(() => connectHub(client).channel, [client]);
  const check = (): void => {
    checkSession(client).then(
      (s) => {
        setSession(s);
        setCheckError(undefined);
      },
      (err: unknown) => setCheckError(err),
    );
  };
  useEffect(check, [client]);
  // The server went away: try again with backoff (1 s doubling to 30 s) until it answers; views keep their last data meanwhile.
  useEffect(() => {
    if (reachable && checkError === undefined) return;
    let failures = 0;
    let timer = 0;
    const again = (): void => {
      timer = window.setTimeout(() => {
        checkSession(client).then(
          (s) => {
            setSession(s);
            setCheckError(undefined);
            setReachable(true);
          },
          () => {
            failures += 1;
            again();
          },
        );
      }, equalJitterDelay(failures, 1_000, 30_000));
    };
    again();
    return () => clearTimeout(timer);
  }, [reachable, checkError, client]);
  const signedIn = session.state === 'signed-in';
  const org = signedIn ? route.params['org'] : undefined;
  // A stream that failed for good may mean the credential is gone: asking the server tells (a 401 ends the session).
  const live = useOrgPage(
    hub,
    org,
    signedIn,
    (error) => {
      checkSession(client).then(
        (s) => {
          if (s.state === 'signed-out') setSession({ state: 'signed-out', reason: ENDED });
          else setStreamError(error);
        },
        (err: unknown) => setCheckError(err),
      );
    },
    // The stream lives in the shared worker: its failures reach this tab only this way.
    (ok) => {
      if (!ok) setReachable(false);
    },
  );

  const convergence = useConvergenceTracker(live?.page);
  const themeToggle = (
    <button type="button" data-testid="theme-toggle" onClick={toggleTheme} aria-label={`Switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}>
      {theme === 'dark' ? 'Light theme' : 'Dark theme'}
    </button>
  );

  let body: JSX.Element;
  if (session.state === 'checking') body = checkError ? <main><ErrorState error={checkError} title="The server is unreachable" /></main> : <main><p class="muted">Loading…</p></main>;
  else if (session.state === 'signed-out') body = <LoginView reason={session.reason} onSignedIn={() => { setSession({ state: 'signed-in' }); if (route.view === 'login') location.hash = href('orgs'); }} />;
  else if (route.view === 'me') body = <MeView />;
  else if (route.view === 'orgs' || route.view === 'login' || !org) body = <OrganizationsView />;
  else if (route.view === 'devices') body = <DevicesView org={org} />;
  else if (route.view === 'device') body = <DeviceView org={org} id={route.params['id'] ?? ''} />;
  else if (route.view === 'security-groups') body = <SecurityGroupsView org={org} />;
  else if (route.view === 'credentials') body = <CredentialsView org={org} />;
  else if (route.view === 'events') body = <EventsView org={org} />;
  else if (route.view === 'audit') body = <AuditView org={org} />;
  else if (route.view === 'members') body = <MembersView org={org} />;
  else if (route.view === 'settings') body = <SettingsView org={org} />;
  else body = <FleetView org={org} />;

  return (
    <LiveContext.Provider value={{ client, informers: live?.page, page: live?.page, events: live?.events, convergence }}>
      <header class="top">
        <a class="brand" href={href('orgs')}>fleetplane</a>
        {org ? <OrgSwitcher org={org} view={route.view} /> : null}
        {org ? (
          <nav class="tabs" aria-label="Organization">
            {TABS.map((t) => (
              <a key={t.view} href={href(t.view, org)} aria-current={route.view === t.view || (t.view === 'devices' && route.view === 'device') ? 'page' : undefined}>
                {t.label}
              </a>
            ))}
          </nav>
        ) : null}
        <span class="spacer" />
        {signedIn ? (
          <AccountMenu>
            <a href={href('me')} data-testid="me-link" aria-current={route.view === 'me' ? 'page' : undefined}>Your keys and sessions</a>
            {themeToggle}
            <button
              type="button"
              data-testid="sign-out"
              onClick={() => {
                // A user's session (an identity provider's sign-in) ends on the server; a pasted token's cookie is cleared.
                // Signed in with a token, the logout is refused (403): the token itself stays valid, as it should.
                void Promise.allSettled([client.auth.logout()])
                  .then(() => client.auth.signOutToken())
                  .finally(() => setSession({ state: 'signed-out' }));
              }}
            >
              Sign out
            </button>
          </AccountMenu>
        ) : (
          themeToggle
        )}
      </header>
      {!reachable ? (
        <div class="banner bad" role="alert" data-testid="server-unreachable" style={{ margin: '1rem' }}>
          The server is unreachable; retrying. What you see is what it last said.
        </div>
      ) : null}
      {streamError ? (
        <div style={{ margin: '1rem' }}>
          <ErrorState error={streamError} title="The live view stopped (reload the page to retry)" />
        </div>
      ) : null}
      {body}
    </LiveContext.Provider>
  );
}
