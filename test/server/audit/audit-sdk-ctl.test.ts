/** Issue 13: the SDK pages the audit log as an async iterator; `fleetplane ctl audit` shows it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../../src/client/index.js';
import type { AuditEntry } from '../../../src/protocol/index.js';
import { startServer } from '../../../src/server/index.js';
import { ctlAt } from '../../client/support/ctl-runner.js';
import { Harness, uniqueName } from '../fixtures.js';

describe('the audit log through the SDK and ctl', () => {
  let h: Harness;
  let client: FleetplaneClient;
  let org: string;
  let name: string;
  const groups: string[] = [];

  beforeAll(async () => {
    h = new Harness(await startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0 }, { listen: true }));
    client = new FleetplaneClient({ baseUrl: h.server.url ?? '', token: h.admin });
    name = uniqueName('audit-ctl');
    org = (await client.organizations.create({ name })).id;
    for (let i = 0; i < 5; i++) groups.push((await client.securityGroups.create(org, { description: `g${i}` })).id);
  });
  afterAll(async () => {
    await h.server.close();
  });

  const ctl = (argv: string[]) => ctlAt(h.server.url ?? '', h.admin, argv);

  it('entries() reads every page, newest first, as the iteration asks', async () => {
    const seen: AuditEntry[] = [];
    for await (const e of client.audit.entries(org, { limit: 2 })) seen.push(e);
    expect(seen.map((e) => e.object_id)).toEqual([...groups].reverse().concat(org));
    const created = [];
    for await (const e of client.audit.entries(org, { kind: 'security_group', gtRevision: 0 })) created.push(e.object_id);
    expect(created).toEqual(groups);
    const server = [];
    for await (const e of client.audit.serverEntries({ organization: org, action: 'create', kind: 'organization' })) server.push(e.object_id);
    expect(server).toEqual([org]);
  });

  it('ctl audit prints a table, filters by flags, and -o json the entries', async () => {
    const table = await ctl(['audit', '--org', name, '--kind', 'security_group', '--limit', '3']);
    expect(table.code, table.err).toBe(0);
    const [header, ...lines] = table.out.trimEnd().split('\n');
    expect(header).toMatch(/^TIME\s+ACTOR\s+ACTION\s+KIND\s+OBJECT\s+REVISION\s+SOURCE$/);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`admin\\s+create\\s+security-group\\s+${groups[4] ?? ''}`));
    const json = await ctl(['audit', '--org', org, '--object', groups[0] ?? '', '-o', 'json']);
    expect(json.code, json.err).toBe(0);
    expect((JSON.parse(json.out) as AuditEntry[]).map((e) => [e.action, e.object_id])).toEqual([['create', groups[0]]]);
    const bad = await ctl(['audit', '--org', org, '--action', 'explode']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--action must be one of');
  });
});
