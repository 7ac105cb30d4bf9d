import { describe, expect, it } from 'vitest';
import { deviceTag, POLICY_GROUPS, POLICY_RULES_PER_GROUP, policyDocument } from '../../src/bench/measure/policy-document.js';
import { compilePolicy, type CompiledPolicy } from '../../src/server/policy/policy-compile.js';
import { parsePolicy } from '../../src/server/policy/policy-parse.js';
import { failingPolicyTests } from '../../src/server/policy/policy-tests.js';

/**
 * The document the fleet bench's policy step (h) applies: it must be one
 * the server takes (parses, compiles, its tests pass), bind the fleet's
 * devices by their tags, and change every rule from one shift to the next.
 */

function compiled(shift: number): CompiledPolicy {
  const parsed = parsePolicy(policyDocument(shift));
  if (!parsed.ok) throw new Error(`does not parse: ${JSON.stringify(parsed.problem)}`);
  expect(failingPolicyTests(parsed.document)).toEqual([]);
  const c = compilePolicy(parsed.document, new Map());
  if (!c.ok) throw new Error(`does not compile: ${JSON.stringify(c.problem)}`);
  return c.policy;
}

describe('policy bench document', () => {
  it('parses, compiles to POLICY_GROUPS groups of POLICY_RULES_PER_GROUP rules, and passes its tests', () => {
    const p = compiled(0);
    expect(p.groups).toHaveLength(POLICY_GROUPS);
    for (const g of p.groups) expect(g.inbound_rules.length + g.outbound_rules.length).toBe(POLICY_RULES_PER_GROUP);
  });

  it("binds every device's tag to a group", () => {
    const bound = new Set(compiled(0).groups.flatMap((g) => g.applies_to));
    for (let i = 0; i < 3 * POLICY_GROUPS; i++) expect(bound.has(deviceTag(i))).toBe(true);
  });

  it('changes every rule of every group from one shift to the next', () => {
    for (const shift of [0, 4]) {
      const before = new Map(compiled(shift).groups.map((g) => [g.name, g]));
      for (const g of compiled(shift + 1).groups) {
        const was = before.get(g.name);
        expect(was).toBeDefined();
        const rules = [...g.inbound_rules, ...g.outbound_rules];
        const old = [...(was?.inbound_rules ?? []), ...(was?.outbound_rules ?? [])];
        rules.forEach((r, j) => expect(r).not.toEqual(old[j]));
      }
    }
  });
});
