import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentError,
  AuthError,
  CompactedError,
  ConflictError,
  FleetplaneClient,
  NotFoundError,
  ValidationError,
  collectList,
  isTombstone,
  type Device,
  type DevicePatch,
  type FleetplaneError,
  type Tombstone,
} from '../../src/client/index.js';
import { byId, startRealServer, uniqueName, wgKey, type RealServer } from './support/real-server.js';

let rs: RealServer;
beforeAll(async () => {
  rs = await startRealServer();
});
afterAll(async () => {
  await rs?.close();
});

async function newOrg(): Promise<string> {
  return (await rs.admin.organizations.create({ name: uniqueName('rest') })).id;
}

/** The typed error a call fails with (or a failure if it succeeds). */
async function failure(call: Promise<unknown>): Promise<FleetplaneError> {
  try {
    await call;
  } catch (err) {
    return err as FleetplaneError;
  }
  throw new Error('expected the call to fail');
}

const NO_SUCH_ID = '00000000-0000-4000-8000-000000000000';

describe('typed REST calls against the real server', () => {
  it('organizations: create, get, list, update, delete', async () => {
    const { owner_invitation: ownerInvitation, ...created } = await rs.admin.organizations.create({ name: uniqueName('org'), network: { mtu: 1400 } });
    expect(created).toMatchObject({ network: { ipv4_cidr: '100.64.0.0/16', mtu: 1400, resolvers: [], routes: [] } });
    // The admin token named no owner: the organization comes with an owner invitation, claimed by its token.
    expect(ownerInvitation).toMatchObject({ organization_id: created.id, role: 'owner', email: null, subject: null, token: expect.stringMatching(/^fpi_/) });
    expect(await rs.admin.organizations.get(created.id)).toEqual(created);
    expect(byId((await rs.admin.organizations.list()).items).get(created.id)).toEqual(created);

    const updated = await rs.admin.organizations.update(created.id, { description: 'd', network: { resolvers: ['10.0.0.53'] } });
    expect(updated).toMatchObject({ description: 'd', network: { mtu: 1400, resolvers: ['10.0.0.53'] } });
    expect(updated.revision).toBeGreaterThan(created.revision);

    await rs.admin.organizations.delete(created.id, { ifMatch: updated.revision });
    const gone = await failure(rs.admin.organizations.get(created.id));
    expect(gone).toBeInstanceOf(NotFoundError);
    expect([gone.status, gone.code]).toEqual([404, 'not_found']);
  });

  it('devices: create, enroll with a registration key, get, update, list, delete; status with the device token; convergence', async () => {
    const org = await newOrg();
    const made = await rs.admin.devices.create(org, { hostname: 'made', public_key: wgKey() });
    expect(made).toMatchObject({ hostname: 'made', organization_id: org, tunnel_ip: '100.64.0.1', status: { online: false } });
    // An admin-created device gets its token too, to hand to the machine.
    expect(made.device_token).toMatch(/^fpd_/);

    const key = await rs.admin.registrationKeys.create(org, { description: 'one', single_use: true });
    expect(key.key).toMatch(/^fpr_/);
    const enrolled = await rs.admin.devices.enroll(org, key.key, { hostname: 'enrolled', public_key: wgKey() });
    expect(enrolled.device_token).toMatch(/^fpd_/);
    expect(enrolled.tunnel_ip).toBe('100.64.0.2');
    // A single-use key enrolls once.
    const again = await failure(rs.admin.devices.enroll(org, key.key, { hostname: 'twice', public_key: wgKey() }));
    expect([again instanceof AuthError, again.status]).toEqual([true, 401]);
    expect((await rs.admin.registrationKeys.list(org)).map((k) => [k.id, k.used])).toEqual([[key.id, true]]);

    const renamed = await rs.admin.devices.update(org, enrolled.id, { hostname: 'renamed', relay: true });
    expect(renamed).toMatchObject({ hostname: 'renamed', relay: true });
    expect(renamed.revision).toBeGreaterThan(enrolled.revision);

    // The device reports its status with its own token: no revision changes.
    const self = new FleetplaneClient({ baseUrl: rs.url, token: enrolled.device_token });
    const head = (await rs.admin.devices.list(org)).revision;
    const status = await self.devices.putStatus(org, enrolled.id, {
      online: true,
      applied_revision: head ?? null,
      apply_error: null,
      local_endpoints: ['192.168.1.10:51820'],
      os: 'linux',
      agent_version: '0.1.0',
    });
    expect(status).toMatchObject({ online: true, applied_revision: head, os: 'linux' });
    expect(typeof status.last_seen).toBe('string');
    const fetched = await rs.admin.devices.get(org, enrolled.id);
    expect(fetched).toMatchObject({ revision: renamed.revision, status: { online: true, applied_revision: head } });
    expect((await rs.admin.devices.list(org)).revision).toBe(head);
    // Only the device itself may report its status.
    const other = await failure(rs.admin.devices.putStatus(org, made.id, { applied_revision: null, apply_error: null, local_endpoints: [], os: null, agent_version: null }));
    expect([other instanceof AuthError, other.status, other.code]).toEqual([true, 403, 'forbidden']);

    const conv = await rs.admin.convergence(org);
    // The device that never reported counts as stale (never seen), not as behind.
    expect(conv).toMatchObject({ revision: head, devices: 2, at_head: 1, behind: 0, error: 0, stale: 1 });
    expect(conv.not_converged.map((d) => d.id)).toEqual([made.id]);

    expect((await rs.admin.devices.list(org)).items.map((d) => d.hostname).sort()).toEqual(['made', 'renamed']);
    await rs.admin.devices.delete(org, made.id);
    expect(await failure(rs.admin.devices.get(org, made.id))).toBeInstanceOf(NotFoundError);
    // Deleting the device revoked its token.
    await rs.admin.devices.delete(org, enrolled.id);
    const revoked = await failure(self.devices.list(org));
    expect([revoked instanceof AuthError, revoked.status]).toEqual([true, 401]);
  });

  it('security groups: create, get, update, list, delete, and 409 while a device uses one', async () => {
    const org = await newOrg();
    const rule = { ip_protocol: 'udp' as const, from_port: 53, to_port: 53, ip_ranges: ['10.0.0.0/8', '10.1.0.1-10.1.0.9'] };
    const g = await rs.admin.securityGroups.create(org, { description: 'dns', inbound_rules: [rule] });
    expect(g).toMatchObject({ organization_id: org, description: 'dns', inbound_rules: [rule], outbound_rules: [] });
    expect(await rs.admin.securityGroups.get(org, g.id)).toEqual(g);
    const u = await rs.admin.securityGroups.update(org, g.id, { outbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: ['0.0.0.0/0'] }] });
    expect(u.outbound_rules).toHaveLength(1);
    expect((await rs.admin.securityGroups.list(org)).items).toEqual([u]);

    const d = await rs.admin.devices.create(org, { hostname: 'member', public_key: wgKey(), security_group_id: g.id });
    const inUse = await failure(rs.admin.securityGroups.delete(org, g.id));
    expect([inUse instanceof ConflictError, inUse.status, inUse.code]).toEqual([true, 409, 'conflict']);
    await rs.admin.devices.update(org, d.id, { security_group_id: null });
    await rs.admin.securityGroups.delete(org, g.id);
    expect((await rs.admin.securityGroups.list(org)).items).toEqual([]);
  });

  it('tokens: create, list, use with its role, revoke', async () => {
    const org = await newOrg();
    const read = await rs.admin.tokens.create(org, { role: 'read', description: 'reader' });
    expect(read).toMatchObject({ organization_id: org, role: 'read', description: 'reader' });
    expect(read.token).toMatch(/^fpt_/);
    expect((await rs.admin.tokens.list(org)).map((t) => t.id)).toEqual([read.id]);
    expect(JSON.stringify(await rs.admin.tokens.list(org))).not.toContain(read.token);

    const reader = new FleetplaneClient({ baseUrl: rs.url, token: read.token });
    expect((await reader.devices.list(org)).items).toEqual([]);
    const denied = await failure(reader.devices.create(org, { hostname: 'x', public_key: wgKey() }));
    expect([denied instanceof AuthError, denied.status, denied.code]).toEqual([true, 403, 'forbidden']);
    // Another organization is invisible to it.
    const hidden = await failure(reader.devices.list(await newOrg()));
    expect(hidden).toBeInstanceOf(NotFoundError);
    expect((await reader.organizations.list()).items.map((o) => o.id)).toEqual([org]);

    await rs.admin.tokens.delete(org, read.id);
    const gone = await failure(reader.devices.list(org));
    expect([gone instanceof AuthError, gone.status, gone.code]).toEqual([true, 401, 'unauthorized']);
  });

  it('registration keys: create, list, delete', async () => {
    const org = await newOrg();
    const expiresAt = new Date(Date.now() + 30 * 86400_000).toISOString();
    const k = await rs.admin.registrationKeys.create(org, { description: 'fleet', expires_at: expiresAt });
    expect(k).toMatchObject({ description: 'fleet', single_use: false, used: false, created_by: { credential_kind: 'admin', credential_id: null, user_id: null } });
    expect(Date.parse(k.expires_at ?? '')).toBe(Date.parse(expiresAt));
    expect((await rs.admin.registrationKeys.list(org)).map((x) => x.id)).toEqual([k.id]);
    // A key can enroll only: anything else with it is forbidden.
    const asKey = new FleetplaneClient({ baseUrl: rs.url, token: k.key });
    expect((await failure(asKey.devices.list(org))).status).toBe(403);
    await rs.admin.registrationKeys.delete(org, k.id);
    expect(await rs.admin.registrationKeys.list(org)).toEqual([]);
    expect(await failure(rs.admin.devices.enroll(org, k.key, { hostname: 'late', public_key: wgKey() }))).toBeInstanceOf(AuthError);
  });

  it('replicas: this server', async () => {
    const replicas = await rs.admin.replicas();
    expect(replicas.map((r) => r.id)).toContain(rs.server.replica.id);
  });

  it('devices rpc: 504 AgentError when the agent is not connected', async () => {
    const org = await newOrg();
    const d = await rs.admin.devices.create(org, { hostname: 'offline', public_key: wgKey() });
    const err = await failure(rs.admin.devices.rpc(org, d.id, 'ping', {}, { wait: 0 }));
    expect([err instanceof AgentError, err.status, err.code]).toEqual([true, 504, 'agent_not_connected']);
  });
});

describe('lists, paging and polling against the real server', () => {
  it('reads pages to the end, and an item changed mid-listing shows up again with its new state', async () => {
    const org = await newOrg();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await rs.admin.devices.create(org, { hostname: `d${i}`, public_key: wgKey() })).id);

    const pages: Array<Array<Device | Tombstone>> = [];
    for await (const p of rs.admin.devices.pages(org, { limit: 3 })) {
      pages.push(p.items);
      if (pages.length === 1) {
        // Change one already listed, delete one already listed.
        await rs.admin.devices.update(org, ids[0] ?? '', { hostname: 'd0-renamed' });
        await rs.admin.devices.delete(org, ids[1] ?? '');
      }
    }
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages.slice(0, -1).every((p) => p.length === 3)).toBe(true);
    const all = pages.flat();
    expect(all.filter(isTombstone).map((t) => t.id)).toEqual([ids[1]]);
    const live = collectList(all);
    const listed = (await rs.admin.devices.list(org)).items;
    expect(byId(live)).toEqual(byId(listed));
    expect(live.find((d) => d.id === ids[0])?.hostname).toBe('d0-renamed');

    // items() yields the same as the pages, one by one.
    const items: Array<Device | Tombstone> = [];
    for await (const item of rs.admin.devices.items(org, { limit: 2 })) items.push(item);
    expect(byId(collectList(items))).toEqual(byId(listed));
  });

  it('gtRevision: changes and tombstones after a revision; CompactedError once compacted', async () => {
    const org = await newOrg();
    const a = await rs.admin.securityGroups.create(org, { description: 'a' });
    const b = await rs.admin.securityGroups.create(org, { description: 'b' });
    const after = b.revision;
    const c = await rs.admin.securityGroups.create(org, { description: 'c' });
    await rs.admin.securityGroups.delete(org, a.id);
    const changed = await rs.admin.securityGroups.page(org, { gtRevision: after });
    expect(changed.items.map((i) => (isTombstone(i) ? `deleted ${i.id}` : `live ${i.id}`))).toEqual([`live ${c.id}`, `deleted ${a.id}`]);

    await rs.server.ctx.store.changes.compact(0);
    const compacted = await failure(rs.admin.securityGroups.page(org, { gtRevision: after }));
    expect([compacted instanceof CompactedError, compacted.status, compacted.code]).toEqual([true, 410, 'revision_compacted']);
  });

  it('poll: 304 NotModified until something changes', async () => {
    const org = await newOrg();
    await rs.admin.devices.create(org, { hostname: 'p', public_key: wgKey() });
    const first = await rs.admin.devices.list(org);
    expect(first.etag).toBe(`"${first.revision}"`);
    expect(await rs.admin.devices.poll(org, first.etag ?? '')).toEqual({ notModified: true, etag: first.etag });
    expect(await rs.admin.securityGroups.poll(org, first.revision ?? -1)).toEqual({ notModified: true, etag: first.etag });
    await rs.admin.securityGroups.create(org, { description: 'change' });
    const changed = await rs.admin.devices.poll(org, first.etag ?? '');
    expect(changed.notModified).toBe(false);
    if (changed.notModified) return;
    expect(changed.revision).toBe((first.revision ?? 0) + 1);
    expect(changed.items).toEqual(first.items);
  });
});

describe('typed errors from the real server', () => {
  it('404 NotFoundError for an unknown device', async () => {
    const org = await newOrg();
    const err = await failure(rs.admin.devices.get(org, NO_SUCH_ID));
    expect(err).toBeInstanceOf(NotFoundError);
    expect([err.status, err.code]).toEqual([404, 'not_found']);
  });

  it('409 ConflictError field_owned_elsewhere naming the owner', async () => {
    const org = await newOrg();
    const d = await rs.admin.devices.create(org, { hostname: 'owned', public_key: wgKey() });
    // Deliberately outside the typed patch: the server must refuse it.
    const mtu = { mtu: 1400 } as unknown as DevicePatch;
    const err = await failure(rs.admin.devices.update(org, d.id, mtu));
    expect(err).toBeInstanceOf(ConflictError);
    expect([err.status, err.code]).toEqual([409, 'field_owned_elsewhere']);
    expect(err.message).toContain(`PATCH /api/organizations/${org}`);
    expect(err.details).toMatchObject({ path: '/mtu' });
  });

  it('412 ConflictError precondition_failed for a stale ifMatch, and nothing changes', async () => {
    const org = await newOrg();
    const d = await rs.admin.devices.create(org, { hostname: 'v1', public_key: wgKey() });
    const v2 = await rs.admin.devices.update(org, d.id, { hostname: 'v2' }, { ifMatch: d.revision });
    const err = await failure(rs.admin.devices.update(org, d.id, { hostname: 'v3' }, { ifMatch: d.revision }));
    expect(err).toBeInstanceOf(ConflictError);
    expect([err.status, err.code]).toEqual([412, 'precondition_failed']);
    const del = await failure(rs.admin.devices.delete(org, d.id, { ifMatch: d.revision }));
    expect([del.status, del.code]).toEqual([412, 'precondition_failed']);
    expect((await rs.admin.devices.get(org, d.id)).hostname).toBe(v2.hostname);
  });

  it('400 ValidationError with the path of the bad field', async () => {
    const org = await newOrg();
    const err = await failure(rs.admin.devices.create(org, { hostname: 'bad', public_key: 'not-a-key' }));
    expect(err).toBeInstanceOf(ValidationError);
    expect([err.status, err.code]).toEqual([400, 'validation_failed']);
    expect(err.details?.['path']).toBe('/public_key');
    expect((await rs.admin.devices.list(org)).items).toEqual([]);
  });

  it('401 AuthError for an unknown token', async () => {
    const err = await failure(new FleetplaneClient({ baseUrl: rs.url, token: 'fpt_nope' }).organizations.list());
    expect(err).toBeInstanceOf(AuthError);
    expect([err.status, err.code]).toEqual([401, 'unauthorized']);
  });
});
