/**
 * Issue 35, part 2: one policy document per organization (protocol v1.13).
 * GET serves the text as sent; PUT applies it as one revision, after its
 * tests; a stale If-Match is 412, a bad value 400 at its line and column, a
 * failing test 422; while managed, the objects it owns refuse REST writes
 * (409 naming the owner); moving to a document and back keeps every rule.
 */
import { describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths, type Organization, type PolicyApplyResult, type SecurityGroup } from '../../../src/protocol/index.js';
import { backends, errorCode, useServer } from '../fixtures.js';

interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

const DOC = `# acme: who reaches what, reviewed in git
tag_owners:
  tag:web: [role:admin]
  tag:db: [role:admin]
network:
  mtu: 1380
security_groups:
  # databases take postgres from web only
  db:
    applies_to: [tag:db]
    inbound:
      - proto: tcp
        ports: 5432
        from: [tag:web]
    outbound:
      - proto: any
  web:
    applies_to: [tag:web]
    inbound:
      - proto: tcp
        ports: 443
    outbound:
      - proto: any
tests:
  - from: tag:web
    to: tag:db
    port: tcp:5432
    expect: allow
  - from: tag:db
    to: tag:web
    port: tcp:22
    expect: deny
`;

describe.each(backends())('the policy document on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('applies as one revision, serves the text exactly as sent, and refuses stale, broken and failing documents without a change', async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      const put = (body: string, headers: Record<string, string> = {}, query = '') =>
        s.call('PUT', `${paths.policy(org)}${query}`, { token: s.admin, payload: body, headers: { [HEADERS.contentType]: MEDIA.yaml, ...headers } });
      const generated = await s.call('GET', paths.policy(org), { token: s.admin });
      expect([generated.statusCode, generated.headers[HEADERS.policyState]]).toEqual([200, 'unmanaged']);
      const etag = String(generated.headers[HEADERS.etag]);

      const dry = await put(DOC, { [HEADERS.ifMatch]: etag }, '?dry_run=true');
      expect(dry.statusCode).toBe(200);
      expect(dry.json<PolicyApplyResult>()).toMatchObject({ applied: false, dry_run: true, tests: { total: 2, passed: 2 } });
      expect(dry.json<PolicyApplyResult>().changes.map((c) => `${c.op} ${c.path}`)).toEqual([
        'add /tag_owners/tag:db',
        'add /tag_owners/tag:web',
        'change /network/mtu',
        'add /security_groups/db',
        'add /security_groups/web',
        'change /tests',
      ]);
      expect((await s.call('GET', paths.policy(org), { token: s.admin })).headers[HEADERS.policyState]).toBe('unmanaged');

      const head = await s.head(org);
      const applied = await put(DOC, { [HEADERS.ifMatch]: etag });
      expect(applied.statusCode).toBe(200);
      const result = applied.json<PolicyApplyResult>();
      expect(result).toMatchObject({ managed: true, applied: true, revision: head + 1 });
      // The document is one revision: the organization's; the group objects go after it.
      const orgNow = await s.ok<Organization>(200, 'GET', paths.organization(org));
      expect(orgNow.revision).toBe(head + 1);
      expect(orgNow.network.mtu).toBe(1380);
      expect(orgNow.policy?.groups.map((g) => [g.name, g.applies_to, g.inbound_rules])).toEqual([
        ['db', ['tag:db'], [{ ip_protocol: 'tcp', from_port: 5432, to_port: 5432, ip_ranges: [], devices: ['tag:web'] }]],
        ['web', ['tag:web'], [{ ip_protocol: 'tcp', from_port: 443, to_port: 443, ip_ranges: [] }]],
      ]);
      const got = await s.call('GET', paths.policy(org), { token: s.admin });
      expect([got.body, got.headers[HEADERS.etag], got.headers[HEADERS.policyState]]).toEqual([DOC, result.etag, 'managed']);
      expect(String(got.headers[HEADERS.contentType])).toContain(MEDIA.yaml);

      // The same document again writes nothing.
      const again = await put(DOC, { [HEADERS.ifMatch]: result.etag });
      expect(again.json<PolicyApplyResult>()).toMatchObject({ applied: false, revision: head + 1, changes: [] });

      const stale = await put(DOC.replace('1380', '1400'), { [HEADERS.ifMatch]: etag });
      expect([stale.statusCode, errorCode(stale)]).toEqual([412, 'precondition_failed']);

      const broken = await put(DOC.replace('ports: 5432', 'ports: 99999'));
      expect([broken.statusCode, errorCode(broken)]).toEqual([400, 'policy_invalid']);
      expect(broken.json<ErrorBody>().error.details).toMatchObject({ path: '/security_groups/db/inbound/0/ports', line: 13, column: 16 });
      const unknownGroup = await put(DOC.replace('from: [tag:web]', 'from: [group:nope]'));
      expect(unknownGroup.json<ErrorBody>().error).toMatchObject({ code: 'policy_invalid', details: { path: '/security_groups/db/inbound/0/from/0', line: 14, column: 16 } });
      const notYaml = await put('security_groups: [\n');
      expect([notYaml.statusCode, errorCode(notYaml)]).toEqual([400, 'policy_invalid']);

      const failing = await put(DOC.replace('from: [tag:web]', 'from: [10.0.0.0/8]'));
      expect([failing.statusCode, errorCode(failing)]).toEqual([422, 'policy_test_failed']);
      expect(failing.json<ErrorBody>().error.details?.['failures']).toMatchObject([{ index: 0, test: { from: 'tag:web', to: 'tag:db', expect: 'allow' } }]);
      expect(failing.json<ErrorBody>().error.message).toContain('test 0');

      const still = await s.call('GET', paths.policy(org), { token: s.admin });
      expect([still.body, await s.head(org)]).toEqual([DOC, head + 1]);
    });

    it('owns its objects while it manages them (409 naming the owner), and hands them back with every rule and id', async () => {
      const s = h();
      const org = (await s.createOrg()).id;
      const group = await s.createGroup(org, { name: 'ops', inbound_rules: [{ ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8'] }] });
      // A device in the group by id: it must stay in it through the move to a document and back.
      await s.createDevice(org, { security_group_id: group.id });
      const generated = await s.call('GET', paths.policy(org), { token: s.admin });
      expect(generated.body).toContain('ops:');
      // Adopting: the generated document, applied as it is, changes no rule.
      const adopted = await s.call('PUT', paths.policy(org), {
        token: s.admin,
        payload: generated.body,
        headers: { [HEADERS.contentType]: MEDIA.yaml, [HEADERS.ifMatch]: String(generated.headers[HEADERS.etag]) },
      });
      expect(adopted.json<PolicyApplyResult>()).toMatchObject({ managed: true, applied: true, changes: [] });
      const managed = await s.ok<Organization>(200, 'GET', paths.organization(org));
      expect(managed.policy?.groups).toEqual([{ id: group.id, name: 'ops', description: '', applies_to: [], inbound_rules: group.inbound_rules, outbound_rules: [] }]);
      expect((await s.ok<{ items: SecurityGroup[] }>(200, 'GET', paths.securityGroups(org))).items).toEqual([]);

      const write = await s.call('PATCH', paths.securityGroup(org, group.id), { token: s.admin, body: { description: 'x' } });
      expect(write.statusCode).toBe(409);
      expect(write.json<ErrorBody>().error).toMatchObject({ code: 'field_owned_elsewhere', details: { owner: 'policy' } });
      const create = await s.call('POST', paths.securityGroups(org), { token: s.admin, body: { name: 'other' } });
      expect([create.statusCode, create.json<ErrorBody>().error.details?.['owner']]).toEqual([409, 'policy']);
      const owners = await s.call('PATCH', paths.organization(org), { token: s.admin, body: { tag_owners: { 'tag:x': ['role:admin'] } } });
      expect([owners.statusCode, owners.json<ErrorBody>().error.details]).toEqual([409, { path: '/tag_owners', owner: 'policy' }]);
      const mtu = await s.call('PATCH', paths.organization(org), { token: s.admin, body: { network: { mtu: 1300 } } });
      expect([mtu.statusCode, mtu.json<ErrorBody>().error.details]).toEqual([409, { path: '/network/mtu', owner: 'policy' }]);
      // Changing every rule is still one revision: the organization's.
      const head = await s.head(org);
      const edited = await s.call('PUT', paths.policy(org), {
        token: s.admin,
        payload: generated.body.replace('ports: 22', 'ports: 2222'),
        headers: { [HEADERS.contentType]: 'text/plain' },
      });
      expect(edited.json<PolicyApplyResult>()).toMatchObject({ applied: true, revision: head + 1, changes: [{ op: 'change', path: '/security_groups/ops' }] });
      expect(await s.head(org)).toBe(head + 1);
      // A group devices name by id can't be dropped, as a group object in use can't be deleted.
      const dropped = await s.call('PUT', paths.policy(org), { token: s.admin, payload: 'security_groups: {}\n', headers: { [HEADERS.contentType]: MEDIA.yaml } });
      expect([dropped.statusCode, dropped.json<ErrorBody>().error.details]).toEqual([409, { path: '/security_groups/ops', devices: 1 }]);
      // A device still names the group by id, and may be moved into it.
      const other = await s.createDevice(org);
      expect((await s.call('PATCH', paths.device(org, other.id), { token: s.admin, body: { security_group_id: group.id } })).statusCode).toBe(200);

      const released = await s.call('DELETE', paths.policy(org), { token: s.admin });
      expect(released.json()).toMatchObject({ managed: false });
      const back = await s.ok<{ items: SecurityGroup[] }>(200, 'GET', paths.securityGroups(org));
      expect(back.items.map((g) => [g.id, g.name, g.inbound_rules])).toEqual([[group.id, 'ops', [{ ...group.inbound_rules[0], from_port: 2222, to_port: 2222 }]]]);
      expect((await s.ok<Organization>(200, 'GET', paths.organization(org))).policy).toBeNull();
      expect((await s.call('PATCH', paths.securityGroup(org, group.id), { token: s.admin, body: { description: 'editable' } })).statusCode).toBe(200);
      expect((await s.call('GET', paths.policy(org), { token: s.admin })).headers[HEADERS.policyState]).toBe('unmanaged');
    });
  });
});
