import { useEffect, useState } from 'preact/hooks';

/** A parsed hash route: `#/orgs/:org/devices/:id` → view `device`, params `{ org, id }`. */
export interface Route {
  view: 'login' | 'orgs' | 'fleet' | 'devices' | 'device' | 'security-groups' | 'credentials' | 'events' | 'audit' | 'settings' | 'members' | 'me';
  params: Readonly<Record<string, string>>;
}

const ORG_VIEWS: Readonly<Record<string, Route['view']>> = {
  devices: 'devices',
  'security-groups': 'security-groups',
  credentials: 'credentials',
  events: 'events',
  audit: 'audit',
  settings: 'settings',
  members: 'members',
};

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'login') return { view: 'login', params: {} };
  if (parts[0] === 'me') return { view: 'me', params: {} };
  if (parts[0] !== 'orgs' || parts[1] === undefined) return { view: 'orgs', params: {} };
  const org = parts[1];
  if (parts[2] === undefined) return { view: 'fleet', params: { org } };
  if (parts[2] === 'devices' && parts[3] !== undefined) return { view: 'device', params: { org, id: parts[3] } };
  return { view: ORG_VIEWS[parts[2]] ?? 'fleet', params: { org } };
}

/** The hash link of a view. */
export function href(view: Route['view'], org?: string, id?: string): string {
  if (view === 'login' || view === 'me') return `#/${view}`;
  if (view === 'orgs' || org === undefined) return '#/orgs';
  const o = `#/orgs/${encodeURIComponent(org)}`;
  if (view === 'fleet') return o;
  if (view === 'device') return `${o}/devices/${encodeURIComponent(id ?? '')}`;
  return `${o}/${view}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = (): void => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
