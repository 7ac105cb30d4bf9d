/**
 * A policy document → what the organization holds while the document
 * manages it (docs/protocol.md "Policy document"): its groups as agents
 * enforce them (rules in the objects' form, ids kept by name), its tag
 * owners and its network settings. Checks what the schema can't say, each
 * problem named by its path in the document so the parser can place it.
 */
import { randomUUID } from 'node:crypto';
import {
  DEFAULT_NETWORK,
  FORMATS,
  GROUP_PREFIX,
  TAG_PREFIX,
  bindingOrder,
  type AutoApprover,
  type Network,
  type PolicyDocument,
  type PolicyRule,
  type PolicySecurityGroup,
  type Rule,
  type TagOwners,
} from '../../protocol/index.js';

/** What a document sets of its organization. */
export interface CompiledPolicy {
  /** In binding order. */
  groups: PolicySecurityGroup[];
  tag_owners: TagOwners;
  /** Every network setting but the tunnel pool. */
  network: Omit<Network, 'ipv4_cidr'>;
}

/** A problem at a path of the document (a JSON pointer). */
export interface CompileProblem {
  path: string;
  message: string;
}

export type Compiled = { ok: true; policy: CompiledPolicy } | { ok: false; problem: CompileProblem };

class Problem extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

function pointer(...parts: (string | number)[]): string {
  return `/${parts.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

/** `443` → 443..443, `8000-8080` → 8000..8080, absent → every port (0..0). */
function portRange(rule: PolicyRule, path: string): { from_port: number; to_port: number } {
  if (rule.ports === undefined) return { from_port: 0, to_port: 0 };
  if (rule.proto !== 'tcp' && rule.proto !== 'udp') throw new Problem(`${path}/ports`, `${rule.proto} has no ports: leave ports out`);
  const [from = 0, to = from] = String(rule.ports).split('-').map(Number);
  if (from < 1 || to > 65535 || to < from) throw new Problem(`${path}/ports`, 'a port 1..65535, or a range low-high of them');
  return { from_port: from, to_port: to };
}

interface Scope {
  groupNames: ReadonlySet<string>;
  /** Tags the document may name: all of them when it declares no owners. */
  tagDeclared: (tag: string) => boolean;
}

/** A reference or address of the document, checked: a declared tag, a group it defines, or a CIDR, IP or IP-IP. */
export function checkAddress(text: string, path: string, scope: Scope): 'device' | 'range' {
  if (text.startsWith(TAG_PREFIX)) {
    if (!scope.tagDeclared(text)) throw new Problem(path, `${text} is not in tag_owners`);
    return 'device';
  }
  if (text.startsWith(GROUP_PREFIX)) {
    if (!scope.groupNames.has(text.slice(GROUP_PREFIX.length))) throw new Problem(path, `${text} is not a group of this document`);
    return 'device';
  }
  if (!FORMATS['ip-range'](text)) throw new Problem(path, `${JSON.stringify(text)} is not a tag:, a group:, a CIDR, an IP or IP-IP`);
  return 'range';
}

function compileRule(rule: PolicyRule, path: string, direction: 'inbound' | 'outbound', scope: Scope): Rule {
  const [side, wrong] = direction === 'inbound' ? (['from', 'to'] as const) : (['to', 'from'] as const);
  if (rule[wrong] !== undefined) throw new Problem(`${path}/${wrong}`, `an ${direction} rule names its addresses in ${side}, not ${wrong}`);
  const addresses = rule[side] ?? [];
  const ip_ranges: string[] = [];
  const devices: string[] = [];
  addresses.forEach((a, i) => (checkAddress(a, `${path}/${side}/${i}`, scope) === 'device' ? devices : ip_ranges).push(a));
  return { ip_protocol: rule.proto, ...portRange(rule, path), ip_ranges, ...(devices.length > 0 ? { devices: [...new Set(devices)] } : {}) };
}

function checkTags(tags: readonly string[] | undefined, path: string, scope: Scope): void {
  tags?.forEach((t, i) => {
    if (!scope.tagDeclared(t)) throw new Problem(`${path}/${i}`, `${t} is not in tag_owners`);
  });
}

/**
 * Compiles `doc`. `ids`: the id each group name had (the organization's
 * current groups), so devices that name a group by id stay in it; a new
 * name gets a new id.
 */
export function compilePolicy(doc: PolicyDocument, ids: ReadonlyMap<string, string>): Compiled {
  const tagOwners = doc.tag_owners ?? {};
  const declared = Object.keys(tagOwners);
  const scope: Scope = {
    groupNames: new Set(Object.keys(doc.security_groups ?? {})),
    tagDeclared: (tag) => declared.length === 0 || declared.includes(tag),
  };
  try {
    const groups = Object.entries(doc.security_groups ?? {}).map(([name, g]): PolicySecurityGroup => {
      const at = pointer('security_groups', name);
      checkTags(g.applies_to, `${at}/applies_to`, scope);
      return {
        id: ids.get(name) ?? randomUUID(),
        name,
        description: g.description ?? '',
        applies_to: [...new Set(g.applies_to ?? [])].sort(),
        inbound_rules: (g.inbound ?? []).map((r, i) => compileRule(r, `${at}/inbound/${i}`, 'inbound', scope)),
        outbound_rules: (g.outbound ?? []).map((r, i) => compileRule(r, `${at}/outbound/${i}`, 'outbound', scope)),
      };
    });
    const approvers: AutoApprover[] = doc.auto_approvers ?? [];
    approvers.forEach((a, i) => checkTags(a.tags, `/auto_approvers/${i}/tags`, scope));
    (doc.tests ?? []).forEach((t, i) => {
      checkAddress(t.from, `/tests/${i}/from`, scope);
      checkAddress(t.to, `/tests/${i}/to`, scope);
    });
    const network = doc.network ?? {};
    return {
      ok: true,
      policy: {
        groups: bindingOrder(groups),
        tag_owners: tagOwners,
        network: {
          mtu: network.mtu ?? DEFAULT_NETWORK.mtu,
          resolvers: network.resolvers ?? [],
          routes: network.routes ?? [],
          auto_approve_cidrs: network.auto_approve_cidrs ?? [],
          auto_approvers: approvers,
        },
      },
    };
  } catch (err) {
    if (err instanceof Problem) return { ok: false, problem: { path: err.path, message: err.message } };
    throw err;
  }
}
