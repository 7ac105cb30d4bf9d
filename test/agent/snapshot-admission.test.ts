/**
 * The reconciler admits each snapshot's objects against the protocol's
 * schemas (issue 36): an invalid object is replaced by its last valid
 * state, or left out when it has none; the result is applied but is no
 * success (the applied revision stays, `apply_error` names the objects).
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Reconciler, type Snapshot } from '../../src/agent/index.js';
import type { ApplyResult, Dataplane, DataplaneDescription, DesiredDataplane } from '../../src/agent/dataplane/index.js';
import type { DeviceObject, Organization, SecurityGroup } from '../../src/protocol/index.js';
import { device, deviceId, groupId, keyPair, organization, rule, securityGroup } from './dataplane/fixtures.js';

class RecordingDataplane implements Dataplane {
  readonly mode = 'render' as const;
  applied: DesiredDataplane[] = [];
  async apply(desired: DesiredDataplane): Promise<ApplyResult> {
    this.applied.push(desired);
    return { changed: true, actions: [] };
  }
  async cleanup(): Promise<void> {}
  async describe(): Promise<DataplaneDescription> {
    throw new Error('not used');
  }
}

function setup() {
  const dataplane = new RecordingDataplane();
  const reconciler = new Reconciler({
    deviceId: deviceId(1),
    interfaceName: 'fp0',
    privateKey: keyPair(1).privateKey,
    listenPort: 51820,
    dataplane,
    logger: pino({ level: 'silent' }),
  });
  return { dataplane, reconciler };
}

/** Objects as they come off the wire: anything at all. */
function snapshot(revision: number, parts: { organization?: unknown; devices?: unknown[]; groups?: unknown[] } = {}): Snapshot {
  const group = securityGroup(1, [rule('tcp', 22, 22, [])]);
  return {
    revision,
    organization: (parts.organization ?? organization()) as Organization,
    devices: (parts.devices ?? [device(1, { security_group_id: group.id }), device(2)]) as DeviceObject[],
    securityGroups: (parts.groups ?? [group]) as SecurityGroup[],
    source: 'watch',
  };
}

describe('snapshot admission', () => {
  it('keeps the last valid state of an object that turns invalid, and reports it without moving the applied revision', async () => {
    const { dataplane, reconciler } = setup();
    await reconciler.reconcile(snapshot(5));
    const bad = { ...organization(), network: { ...organization().network, mtu: '1420\nPostUp = touch /tmp/pwned' } };
    const badGroup = { ...securityGroup(1, [rule('tcp', 22, 22, [])]), inbound_rules: [{ ip_protocol: 'tcp', from_port: 1.5, to_port: 70000, ip_ranges: [] }] };
    const outcome = await reconciler.reconcile(snapshot(6, { organization: bad, groups: [badGroup] }));
    expect(outcome).toMatchObject({ type: 'applied', revision: 6 });
    const applied = dataplane.applied.at(-1);
    expect(applied?.interface.mtu).toBe(1420);
    expect(applied?.firewall).toMatchObject({ mode: 'filter', inbound: [{ protocol: 'tcp', ports: { from: 22, to: 22 } }] });
    expect(reconciler.state.applied_revision).toBe(5);
    expect(reconciler.state.rejected).toEqual([
      { kind: 'organization', id: organization().id, revision: 1, problem: '/network/mtu must be integer', kept_previous: true },
      { kind: 'security-group', id: groupId(1), revision: 101, problem: '/inbound_rules/0/from_port must be integer', kept_previous: true },
    ]);
    expect(reconciler.state.apply_error).toMatch(/^rejected 2 objects .*organization .*\/network\/mtu must be integer; security-group /);

    await reconciler.reconcile(snapshot(7));
    expect(reconciler.state).toMatchObject({ applied_revision: 7, apply_error: null, rejected: [] });
  });

  it('leaves out an invalid object it has no valid state of', async () => {
    const { dataplane, reconciler } = setup();
    const intruder = { ...device(3), id: `${deviceId(3)}\nPostUp = touch /tmp/pwned` };
    await reconciler.reconcile(snapshot(5, { devices: [device(1), device(2), intruder] }));
    expect(dataplane.applied.at(-1)?.peers.map((p) => p.device_id)).toEqual([deviceId(2)]);
    expect(reconciler.state.rejected).toEqual([
      { kind: 'device', id: `${deviceId(3)}?PostUp = touch /tmp/pwned`, revision: 3, problem: '/id must match format "uuid"', kept_previous: false },
    ]);
  });

  it('applies nothing when the organization has no valid state', async () => {
    const { dataplane, reconciler } = setup();
    const outcome = await reconciler.reconcile(snapshot(5, { organization: { ...organization(), id: 42 } }));
    expect(outcome.type).toBe('failed');
    expect(dataplane.applied).toEqual([]);
    expect(reconciler.state.apply_error).toMatch(/organization 42 \(revision 1\): \/id must be string/);
  });

  it('accepts objects of an older server without the fields added since (their absence meant none)', async () => {
    const { dataplane, reconciler } = setup();
    const { approved_cidrs: _a, ephemeral: _e, tags: _t, ...old } = device(2, { advertise_cidrs: ['10.9.0.0/16'] });
    const { audit_readable_by_read: _r, tag_owners: _o, ...oldOrg } = organization();
    const { auto_approve_cidrs: _x, auto_approvers: _y, ...oldNetwork } = oldOrg.network;
    // A group from before v1.12: no name, and rules without `devices`.
    const { name: _n, ...oldGroup } = securityGroup(1, [rule('tcp', 22, 22, ['10.0.0.0/8'])]);
    const self = device(1, { security_group_id: oldGroup.id });
    await reconciler.reconcile(snapshot(5, { organization: { ...oldOrg, network: oldNetwork }, devices: [self, old], groups: [oldGroup] }));
    expect(reconciler.state).toMatchObject({ applied_revision: 5, apply_error: null, rejected: [] });
    expect(dataplane.applied.at(-1)?.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32']);
    expect(dataplane.applied.at(-1)?.firewall).toMatchObject({ mode: 'filter', group_found: true, sets: [] });
  });
});
