/**
 * The tests of a policy document, evaluated against the document alone
 * (docs/protocol.md "Policy document"), as Tailscale's ACL tests are: a
 * device carrying tag X is in the first group (by name, as agents bind
 * them) whose `applies_to` names X; a device in no group accepts and sends
 * everything, and one in a group with no outbound rules sends nothing new
 * (as agents apply it). `from` may reach `to` on a port when the destination's group
 * admits the source inbound and the source's group lets it out.
 */
import { GROUP_PREFIX, bindingOrder, parseDeviceReference, type PolicyDocument, type PolicyGroup, type PolicyRule, type PolicyTest } from '../../protocol/index.js';

/** A failed test: its index, what it expected, and why the document does otherwise. */
export interface PolicyTestFailure {
  index: number;
  test: PolicyTest;
  reason: string;
}

const ANY_V4 = '0.0.0.0/0';

interface Port {
  proto: 'tcp' | 'udp' | 'icmp' | 'icmpv6';
  port: number | undefined;
}

function portOf(text: string): Port {
  const [proto = '', port] = text.split(':');
  return { proto: proto as Port['proto'], port: port === undefined ? undefined : Number(port) };
}

/** Whether `rule`'s protocol and ports cover `p`. */
function coversPort(rule: PolicyRule, p: Port): boolean {
  if (rule.proto !== 'any' && rule.proto !== p.proto) return false;
  if (rule.ports === undefined || p.port === undefined) return true;
  const [from = 0, to = from] = String(rule.ports).split('-').map(Number);
  return p.port >= from && p.port <= to;
}

/** A document with its groups in binding order, worked out once for all its tests. */
interface Bound {
  doc: PolicyDocument;
  order: { name: string; applies_to?: readonly string[] | undefined; group: PolicyGroup }[];
}

/** The group a reference's devices are in: by name for `group:`, the first applying to the tag for `tag:`; undefined: no group (allow all). */
function groupOf({ doc, order }: Bound, reference: string): { name: string; group: PolicyGroup } | undefined {
  const parsed = parseDeviceReference(reference);
  if (!parsed) return undefined;
  if (parsed.kind === 'group') {
    const name = 'name' in parsed ? parsed.name : parsed.id;
    const group = doc.security_groups?.[name];
    return group === undefined ? undefined : { name, group };
  }
  const found = order.find((g) => (g.applies_to ?? []).includes(parsed.tag));
  return found === undefined ? undefined : { name: found.name, group: found.group };
}

/**
 * Whether an address list (a rule's `from` or `to`) holds the devices of
 * `reference`: absent or empty (every address), `0.0.0.0/0`, the reference
 * itself, or the group those devices are in (for a group, also every tag
 * its `applies_to` names). Other CIDRs can't be told
 * from the document (tunnel IPs are assigned later): they hold no device.
 */
function holds(doc: Bound, addresses: readonly string[] | undefined, reference: string): boolean {
  if (addresses === undefined || addresses.length === 0) return true;
  if (addresses.includes(ANY_V4) || addresses.includes(reference)) return true;
  const group = groupOf(doc, reference);
  if (group === undefined) return false;
  if (addresses.includes(`${GROUP_PREFIX}${group.name}`)) return true;
  // A group's devices are those carrying one of its applies_to tags: a list naming all those tags holds them.
  const tags = group.group.applies_to ?? [];
  return reference.startsWith(GROUP_PREFIX) && tags.length > 0 && tags.every((t) => addresses.includes(t));
}

function reaches(doc: Bound, test: PolicyTest): { allowed: boolean; reason: string } {
  const port = portOf(test.port);
  const destination = groupOf(doc, test.to);
  const source = groupOf(doc, test.from);
  const inbound = destination === undefined || (destination.group.inbound ?? []).some((r) => coversPort(r, port) && holds(doc, r.from, test.from));
  if (!inbound) return { allowed: false, reason: `group ${destination?.name ?? ''} of ${test.to} admits no ${test.port} from ${test.from}` };
  const outbound = source === undefined || (source.group.outbound ?? []).some((r) => coversPort(r, port) && holds(doc, r.to, test.to));
  if (!outbound) return { allowed: false, reason: `group ${source?.name ?? ''} of ${test.from} lets no ${test.port} out to ${test.to}` };
  const via = [destination ? `group ${destination.name} admits it` : `${test.to} is in no group`, source ? `group ${source.name} lets it out` : `${test.from} is in no group`];
  return { allowed: true, reason: via.join(', ') };
}

/** The tests of `doc` that fail, in order; empty when all pass. */
export function failingPolicyTests(doc: PolicyDocument): PolicyTestFailure[] {
  const bound: Bound = {
    doc,
    order: bindingOrder(Object.entries(doc.security_groups ?? {}).map(([name, group]) => ({ id: name, name, applies_to: group.applies_to, group }))),
  };
  return (doc.tests ?? []).flatMap((test, index) => {
    const { allowed, reason } = reaches(bound, test);
    return allowed === (test.expect === 'allow') ? [] : [{ index, test, reason: test.expect === 'allow' ? reason : `expected deny, but ${reason}` }];
  });
}
