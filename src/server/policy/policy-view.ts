/**
 * An organization's access as a policy document sees it, whether a document
 * manages it or its objects do (docs/protocol.md "Policy document"): what
 * `GET .../policy` renders for an organization without a document, and
 * what `PUT` compares a document with to say what would change.
 */
import { Document } from 'yaml';
import {
  DEVICE_REFERENCE_PATTERN,
  GROUP_PREFIX,
  bindingOrder,
  parseDeviceReference,
  type AutoApprover,
  type Organization,
  type PolicyChange,
  type PolicyDocument,
  type PolicyGroup,
  type PolicyRule,
  type PolicyTest,
  type Route,
  type Rule,
  type SecurityGroup,
  type TagOwners,
} from '../../protocol/index.js';
import { sameJson } from '../../util/same-json.js';

/** A group as the view compares it: rules in the objects' form, group references by name. */
export interface GroupView {
  description: string;
  applies_to: string[];
  inbound_rules: Rule[];
  outbound_rules: Rule[];
}

export interface PolicyView {
  tag_owners: TagOwners;
  auto_approvers: AutoApprover[];
  network: { mtu: number; resolvers: string[]; routes: Route[]; auto_approve_cidrs: string[] };
  security_groups: Record<string, GroupView>;
  tests: PolicyTest[];
}

/** The name a document gives a group: its own, or one made from its id for a group that has none. */
export function documentName(group: { id: string; name: string | null }): string {
  return group.name ?? `group-${group.id.slice(0, 8)}`;
}

const REFERENCE = new RegExp(DEVICE_REFERENCE_PATTERN);

/** The view of an organization's current access: `groups` are its live group objects, or its policy's while managed. */
export function currentView(org: Organization, groups: readonly SecurityGroup[], tests: PolicyTest[]): PolicyView {
  const source = org.policy ? org.policy.groups : bindingOrder(groups);
  const nameById = new Map(source.map((g) => [g.id, documentName(g)]));
  // A rule may name a group by id; the document names it by name.
  const byName = (devices: readonly string[] | undefined): string[] | undefined =>
    devices?.map((d) => {
      const parsed = REFERENCE.test(d) ? parseDeviceReference(d) : undefined;
      const name = parsed && 'id' in parsed ? nameById.get(parsed.id) : undefined;
      return name === undefined ? d : `${GROUP_PREFIX}${name}`;
    });
  const rules = (list: readonly Rule[]): Rule[] =>
    list.map((r) => {
      const devices = byName(r.devices);
      return { ip_protocol: r.ip_protocol, from_port: r.from_port, to_port: r.to_port, ip_ranges: r.ip_ranges, ...(devices && devices.length > 0 ? { devices } : {}) };
    });
  const network = org.network;
  return {
    tag_owners: org.tag_owners,
    auto_approvers: network.auto_approvers,
    network: { mtu: network.mtu, resolvers: network.resolvers, routes: network.routes, auto_approve_cidrs: network.auto_approve_cidrs },
    security_groups: Object.fromEntries(
      source.map((g) => [
        documentName(g),
        { description: g.description, applies_to: [...(g.applies_to ?? [])], inbound_rules: rules(g.inbound_rules), outbound_rules: rules(g.outbound_rules) },
      ]),
    ),
    tests,
  };
}

function keyed<T>(path: string, before: Readonly<Record<string, T>>, after: Readonly<Record<string, T>>): PolicyChange[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.flatMap((k): PolicyChange[] => {
    const from = before[k];
    const to = after[k];
    const at = `${path}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (from === undefined) return [{ op: 'add', path: at, to }];
    if (to === undefined) return [{ op: 'remove', path: at, from }];
    return sameJson(from, to) ? [] : [{ op: 'change', path: at, from, to }];
  });
}

function whole(path: string, from: unknown, to: unknown): PolicyChange[] {
  return sameJson(from, to) ? [] : [{ op: 'change', path, from, to }];
}

/** What applying `after` changes of `before`: groups and tag owners one by one, each network setting, auto-approvers and tests as lists. */
export function policyChanges(before: PolicyView, after: PolicyView): PolicyChange[] {
  return [
    ...keyed('/tag_owners', before.tag_owners, after.tag_owners),
    ...whole('/auto_approvers', before.auto_approvers, after.auto_approvers),
    ...keyed<unknown>('/network', before.network, after.network),
    ...keyed('/security_groups', before.security_groups, after.security_groups),
    ...whole('/tests', before.tests, after.tests),
  ];
}

function ports(rule: Rule): PolicyRule['ports'] {
  if (rule.ip_protocol !== 'tcp' && rule.ip_protocol !== 'udp') return undefined;
  if (rule.from_port === 0 && rule.to_port === 0) return undefined;
  const from = Math.max(1, rule.from_port);
  return from === rule.to_port ? from : `${from}-${rule.to_port}`;
}

function documentRule(rule: Rule, side: 'from' | 'to'): PolicyRule {
  const addresses = [...rule.ip_ranges, ...(rule.devices ?? [])];
  const p = ports(rule);
  return { proto: rule.ip_protocol, ...(p === undefined ? {} : { ports: p }), ...(addresses.length > 0 ? { [side]: addresses } : {}) };
}

/** The document a view is: what `GET .../policy` answers for an organization no document manages yet. */
export function viewDocument(view: PolicyView): PolicyDocument {
  const groups = Object.fromEntries(
    Object.entries(view.security_groups).map(([name, g]): [string, PolicyGroup] => [
      name,
      {
        ...(g.description === '' ? {} : { description: g.description }),
        ...(g.applies_to.length === 0 ? {} : { applies_to: g.applies_to }),
        inbound: g.inbound_rules.map((r) => documentRule(r, 'from')),
        outbound: g.outbound_rules.map((r) => documentRule(r, 'to')),
      },
    ]),
  );
  return {
    tag_owners: view.tag_owners,
    auto_approvers: view.auto_approvers,
    network: view.network,
    security_groups: groups,
    ...(view.tests.length === 0 ? {} : { tests: view.tests }),
  };
}

/** The text of a generated document, saying where it came from. */
export function renderDocument(view: PolicyView, revision: number): string {
  const doc = new Document(viewDocument(view));
  doc.commentBefore =
    ` Generated from the organization's objects at revision ${revision}: no document manages it yet.\n` +
    ' Edit it, keep it in git, and apply it with `fleetplane ctl policy apply -f FILE`.';
  return doc.toString({ lineWidth: 0 });
}
