import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { SecurityGroup } from '../../client/index.js';
import { PolicyNotice } from '../components/policy-notice.js';
import { EmptyState, ErrorState } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { useGroupUsage } from '../live/group-usage.js';
import { useEnforcedGroups } from '../live/groups.js';
import { useOrganization } from '../live/hooks.js';
import { GroupEditor } from './security-group-editor.js';
import { GroupsTable } from './security-groups-table.js';

/**
 * The organization's security groups, live from the watch stream, in binding
 * order: the objects, editable; or, while a policy document manages the
 * organization, the document's groups, read-only, with the reason. Each
 * row previews its rules and says how many devices it holds; a create, save
 * or delete confirms in a banner (`data-testid="sg-saved"`).
 */
export function SecurityGroupsView(props: { org: string }): JSX.Element {
  const client = useClient();
  const organization = useOrganization(props.org);
  const enforced = useEnforcedGroups(props.org);
  const [editing, setEditing] = useState<SecurityGroup | 'new' | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const usage = useGroupUsage(enforced.groups);
  const managed = enforced.source === 'policy';
  // A document applied meanwhile owns the group being edited: saving it would be refused.
  useEffect(() => {
    if (managed) {
      setEditing(undefined);
      setError(undefined);
      setSaved(undefined);
    }
  }, [managed]);
  if (enforced.source === 'policy') {
    return (
      <main>
        <h1>Security groups</h1>
        <PolicyNotice what="These security groups are" org={organization?.name ?? props.org} />
        {enforced.groups.length === 0 ? (
          <EmptyState title="The policy document has no security groups">Devices accept everything on the tunnel.</EmptyState>
        ) : (
          <GroupsTable groups={enforced.groups} source="policy" usage={usage} />
        )}
      </main>
    );
  }
  if (editing !== undefined) {
    return (
      <main>
        <h1>{editing === 'new' ? 'New security group' : `Security group ${editing.name ?? (editing.description || editing.id)}`}</h1>
        <GroupEditor
          org={props.org}
          group={editing === 'new' ? undefined : editing}
          onDone={(what) => {
            setSaved(what);
            setEditing(undefined);
          }}
        />
      </main>
    );
  }
  return (
    <main>
      <h1>Security groups</h1>
      {error ? <ErrorState error={error} title="Not deleted" /> : null}
      {saved ? (
        <p class="banner ok" role="status" data-testid="sg-saved">
          {saved}
        </p>
      ) : null}
      <div class="toolbar">
        <button
          type="button"
          class="primary"
          data-testid="sg-create"
          onClick={() => {
            setSaved(undefined);
            setEditing('new');
          }}
        >New security group</button>
      </div>
      {enforced.synced && enforced.groups.length === 0 ? <EmptyState title="No security groups">Devices in no group accept everything on the tunnel.</EmptyState> : null}
      {enforced.groups.length > 0 ? (
        <GroupsTable
          groups={enforced.groups}
          source="objects"
          usage={usage}
          actions={(g) => (
            <>
              <button
                type="button"
                data-testid="sg-edit"
                onClick={() => {
                  setSaved(undefined);
                  setEditing(g);
                }}
              >Edit</button>{' '}
              <button
                type="button"
                class="danger"
                data-testid="sg-delete"
                onClick={() => {
                  if (confirm(`Delete the security group ${g.name ?? (g.description || g.id)}?`)) client.securityGroups.delete(props.org, g.id).then(() => {
                      setError(undefined);
                      setSaved(`Deleted ${g.name ?? (g.description || g.id)}`);
                    }, (err: unknown) => {
                      setSaved(undefined);
                      setError(err);
                    });
                }}
              >
                Delete
              </button>
            </>
          )}
        />
      ) : null}
    </main>
  );
}
