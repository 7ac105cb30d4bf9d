import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Organization } from '../../client/index.js';
import { useClient } from '../live/context.js';
import { useOrganization } from '../live/hooks.js';
import { href, type Route } from '../router.js';

/**
 * The selected organization's name in the header (live from its page
 * stream), and a switch to any other the credential sees, to the same view
 * there. The list is read when the switch opens, not kept live.
 */
export function OrgSwitcher(props: { org: string; view: Route['view'] }): JSX.Element {
  const client = useClient();
  const current = useOrganization(props.org);
  const [orgs, setOrgs] = useState<Organization[] | undefined>(undefined);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    const ac = new AbortController();
    client.organizations.list({ signal: ac.signal }).then(
      (page) => setOrgs(page.items),
      () => {
        if (!ac.signal.aborted) setFailed(true);
      },
    );
    return () => ac.abort();
  }, [client, props.org]);
  // A device's page has no counterpart in another organization: switch to its list.
  const view = props.view === 'device' ? 'devices' : props.view;
  const name = current?.name ?? orgs?.find((o) => o.id === props.org)?.name ?? '…';
  if (!orgs || orgs.length < 2) {
    return (
      <span class="org-name" data-testid="org-name" title={failed ? `${name} (the other organizations could not be listed)` : name}>
        {name}
      </span>
    );
  }
  return (
    <span class="org-name">
      <label for="org-switch" class="visually-hidden">Organization</label>
      <select
        id="org-switch"
        data-testid="org-switch"
        title={name}
        value={props.org}
        onChange={(e) => {
          location.hash = href(view, e.currentTarget.value);
        }}
      >
        {orgs.map((o) => (
          <option key={o.id} value={o.id}>
            {o.id === props.org ? name : o.name}
          </option>
        ))}
      </select>
    </span>
  );
}
