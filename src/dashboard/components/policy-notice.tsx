import type { JSX } from 'preact';

/**
 * Why fields are read-only while a policy document manages the organization
 * (docs/protocol.md "Policy document"), and the commands that change that.
 * `what` names the fields, e.g. "These security groups are"; `id` lets the
 * read-only fields point at it (aria-describedby).
 */
export function PolicyNotice(props: { what: string; org: string; id?: string | undefined }): JSX.Element {
  // Quoted so the command copies as one line whatever the organization's name.
  const org = /^[\w.-]+$/.test(props.org) ? props.org : `'${props.org.replace(/'/g, "'\\''")}'`;
  return (
    <div class="banner warn" role="note" id={props.id} data-testid="policy-notice">
      {props.what} managed by this organization's policy document: change it with <code>fleetplane ctl policy apply -f policy.yaml --org {org}</code>, or hand it back to objects with{' '}
      <code>fleetplane ctl policy release --org {org}</code>.
    </div>
  );
}
