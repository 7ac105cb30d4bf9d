/**
 * Issue 37 ("A CLI without traps", "An audit browser"): `ctl audit --object`
 * takes a name as every other ctl command does, and fails loudly on a name
 * it can't resolve; its table shows names, `-o wide` each change before →
 * after, `-o json` the whole entry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../../src/client/index.js';
import type { AuditEntry } from '../../../src/protocol/index.js';
import { startServer } from '../../../src/server/index.js';
import { ctlAt } from '../../client/support/ctl-runner.js';
import { Harness, uniqueName, wgKey } from '../fixtures.js';

describe('ctl audit --object by name, and names and changes in its output', () => {
  let h: Harness;
  let client: FleetplaneClient;
  let org: string;
  let orgName: string;
  let device: string;
  let host: string;
  let renamed: string;
  let group: string;

  beforeAll(async () => {
    h = new Harness(await startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0 }, { listen: true }));
    client = new FleetplaneClient({ baseUrl: h.server.url ?? '', token: h.admin });
    orgName = uniqueName('audit-names');
    org = (await client.organizations.create({ name: orgName })).id;
    host = uniqueName('web');
    renamed = `${host}-2`;
    device = (await client.devices.create(org, { hostname: host, public_key: wgKey() })).id;
    await client.devices.update(org, device, { hostname: renamed });
    group = (await client.securityGroups.create(org, { name: 'dup', description: 'x' })).id;
    await client.devices.create(org, { hostname: 'dup', public_key: wgKey() });
  });
  afterAll(async () => {
    await h.server.close();
  });

  const ctl = (argv: string[]) => ctlAt(h.server.url ?? '', h.admin, ['audit', '--org', orgName, ...argv]);

  it('--object takes a hostname: the device entries, each under the name it had, with the change before → after', async () => {
    const json = await ctl(['--object', renamed, '-o', 'json']);
    expect(json.code, json.err).toBe(0);
    const entries = JSON.parse(json.out) as AuditEntry[];
    expect(entries.map((e) => [e.action, e.kind, e.object_id, e.object_name])).toEqual([
      ['update', 'device', device, renamed],
      ['create', 'device', device, host],
    ]);
    expect(entries[0]?.details).toEqual({ fields: ['hostname'], changes: { hostname: { from: host, to: renamed } } });

    const wide = await ctl(['--object', renamed, '-o', 'wide']);
    expect(wide.code, wide.err).toBe(0);
    const [header, update, create] = wide.out.trimEnd().split('\n');
    expect(header).toMatch(/^TIME\s+ACTOR\s+ACTION\s+KIND\s+OBJECT\s+REVISION\s+SOURCE\s+OBJECT ID\s+USER AGENT\s+CHANGES\s+DETAILS$/);
    expect(update).toMatch(new RegExp(`admin\\s+update\\s+device\\s+${renamed}\\s.*${device}.*hostname: ${host} → ${renamed}`));
    expect(create).toMatch(new RegExp(`admin\\s+create\\s+device\\s+${host}\\s`));
  });

  it("--object takes the organization's name, and a group's under --kind", async () => {
    const byOrg = await ctl(['--object', orgName, '-o', 'json']);
    expect(byOrg.code, byOrg.err).toBe(0);
    expect((JSON.parse(byOrg.out) as AuditEntry[]).map((e) => [e.action, e.object_id])).toEqual([['create', org]]);
    const table = await ctl(['--object', 'dup', '--kind', 'sg']);
    expect(table.code, table.err).toBe(0);
    const lines = table.out.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/admin\s+create\s+security-group\s+dup\s/);
    expect(lines[1]).not.toContain(group);
  });

  it('an unknown name exits 1 naming what was looked for; it never prints an empty listing', async () => {
    const r = await ctl(['--object', 'no-such-thing']);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toContain(`no device, security-group, organization named "no-such-thing" in organization ${orgName}`);
    // The device's old name is no longer anything's.
    expect((await ctl(['--object', host])).code).toBe(1);
  });

  it('a name of objects of two kinds exits 1 listing them; names of kinds found by id only are a usage error', async () => {
    const r = await ctl(['--object', 'dup']);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/"dup" is ambiguous in organization .*: (device dup \(.*\), security-group dup \(.*\)|security-group dup \(.*\), device dup \(.*\)); add --kind or give an id/);
    expect(r.err).toContain(group);
    const token = await ctl(['--object', 'dup', '--kind', 'token']);
    expect(token.code).toBe(2);
    expect(token.err).toContain('token objects are found by id only');
  });
});
