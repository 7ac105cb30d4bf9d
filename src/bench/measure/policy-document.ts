import { stringify } from 'yaml';
import type { PolicyDocument, PolicyGroup, PolicyRule, PolicyTest } from '../../protocol/index.js';

/** (h)'s document: this many groups, each bound by one tag (`applies_to`), each with this many rules. */
export const POLICY_GROUPS = 64;
export const POLICY_RULES_PER_GROUP = 8;
/** Of each group's rules, the inbound ones (the rest are outbound). */
const INBOUND_RULES = 6;
const INBOUND_BASE_PORT = 10_000;
const OUTBOUND_PORTS = { low: 1_024, high: 49_151 } as const;

const pad = (k: number): string => String(k).padStart(3, '0');

/** The tag the document's group `k` applies to. */
function policyTag(k: number): string {
  return `tag:t${pad(((k % POLICY_GROUPS) + POLICY_GROUPS) % POLICY_GROUPS)}`;
}

/** The tag device `i` of the fleet carries (given at creation): the devices spread evenly over the groups. */
export function deviceTag(i: number): string {
  return policyTag(i);
}

function inboundRule(k: number, j: number, shift: number): PolicyRule {
  return {
    proto: j % 2 === 0 ? 'tcp' : 'udp',
    ports: INBOUND_BASE_PORT + 100 * j + shift,
    from: [policyTag(k + j + 1), `10.${k}.${j}.0/24`],
  };
}

function outboundRule(j: number, shift: number): PolicyRule {
  return { proto: j % 2 === 0 ? 'tcp' : 'udp', ports: `${OUTBOUND_PORTS.low + shift}-${OUTBOUND_PORTS.high + shift}` };
}

function group(k: number, shift: number): PolicyGroup {
  const rules = Array.from({ length: POLICY_RULES_PER_GROUP }, (_, j) => j);
  return {
    applies_to: [policyTag(k)],
    inbound: rules.filter((j) => j < INBOUND_RULES).map((j) => inboundRule(k, j, shift)),
    outbound: rules.filter((j) => j >= INBOUND_RULES).map((j) => outboundRule(j, shift)),
  };
}

/** Group k+1's devices reach group k's first inbound port: its rule names their tag, and their outbound TCP range covers the port. */
function test(k: number, shift: number): PolicyTest {
  return { from: policyTag(k + 1), to: policyTag(k), port: `tcp:${INBOUND_BASE_PORT + shift}`, expect: 'allow' };
}

/**
 * The document (h) applies, as YAML: POLICY_GROUPS groups `g000`… bound by
 * tag, POLICY_RULES_PER_GROUP rules each, every rule with ports, and one
 * passing test per group. Each `shift` moves every port by that much, so
 * the document of `shift` + 1 changes every rule of the one of `shift`
 * (while a port stays within 1..65535: shift < 16,384).
 */
export function policyDocument(shift: number): string {
  const groups = Array.from({ length: POLICY_GROUPS }, (_, k) => k);
  const doc: PolicyDocument = {
    tag_owners: {},
    security_groups: Object.fromEntries(groups.map((k) => [`g${pad(k)}`, group(k, shift)])),
    tests: groups.map((k) => test(k, shift)),
  };
  return `# fleetplane bench (h): ${POLICY_GROUPS} groups × ${POLICY_RULES_PER_GROUP} rules, ports shifted by ${shift}\n${stringify(doc)}`;
}
