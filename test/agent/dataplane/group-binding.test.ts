/**
 * Which group a device's firewall comes from (protocol v1.13): a group's
 * `applies_to` binds devices by tag (the first group by name wins; a
 * `security_group_id` wins over tags), and while a policy document manages
 * the organization its groups, not the objects, are enforced.
 */
import { describe, expect, it } from 'vitest';
import type { Organization } from '../../../src/protocol/index.js';
import { desiredStateOf, device, groupId, organization, rule, securityGroup } from './fixtures.js';

const ssh = rule('tcp', 22, 22, []);
const web = rule('tcp', 443, 443, []);

describe('group binding', () => {
  it('binds a device by tag to the first group by name whose applies_to holds one of its tags', () => {
    const a = { ...securityGroup(1, [web]), name: 'b-web', applies_to: ['tag:web'] };
    const b = { ...securityGroup(2, [ssh]), name: 'a-ops', applies_to: ['tag:ops', 'tag:web'] };
    const devices = [device(1, { tags: ['tag:web'] }), device(2, { tags: ['tag:db'] }), device(3, { tags: ['tag:web'], security_group_id: groupId(1) })];
    const firewall = (n: number) => desiredStateOf(n, { devices, securityGroups: [a, b] }).firewall;
    expect(firewall(1)).toMatchObject({ mode: 'filter', security_group_id: groupId(2), inbound: [{ ports: { from: 22, to: 22 } }] });
    expect(firewall(2)).toEqual({ mode: 'allow-all' });
    expect(firewall(3)).toMatchObject({ security_group_id: groupId(1), inbound: [{ ports: { from: 443, to: 443 } }] });
  });

  it("enforces the policy document's groups while it manages the organization, and group: references resolve to their members", () => {
    const object = { ...securityGroup(1, [ssh]), name: 'db', applies_to: ['tag:db'] };
    const managed: Organization = {
      ...organization(),
      policy: {
        groups: [
          { id: groupId(2), name: 'db', description: '', applies_to: ['tag:db'], inbound_rules: [{ ...rule('tcp', 5432, 5432, []), devices: ['group:web'] }], outbound_rules: [] },
          { id: groupId(3), name: 'web', description: '', applies_to: ['tag:web'], inbound_rules: [], outbound_rules: [] },
        ],
      },
    };
    const devices = [device(1, { tags: ['tag:db'] }), device(2, { tags: ['tag:web'] })];
    const before = desiredStateOf(1, { devices, securityGroups: [object] }).firewall;
    expect(before).toMatchObject({ security_group_id: groupId(1), inbound: [{ ports: { from: 22, to: 22 } }] });
    const after = desiredStateOf(1, { devices, securityGroups: [object], organization: managed }).firewall;
    expect(after).toMatchObject({ security_group_id: groupId(2), inbound: [{ ports: { from: 5432, to: 5432 }, sets: ['ref0'] }] });
    expect(after.mode === 'filter' ? after.sets : []).toEqual([{ name: 'ref0', reference: 'group:web', ipv4: [device(2).tunnel_ip], ipv6: [] }]);
  });
});
