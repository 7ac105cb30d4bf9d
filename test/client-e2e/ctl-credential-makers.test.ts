/**
 * Issue 36 through `fleetplane ctl` (in process) against a real server: an
 * organization created with the admin token prints its owner invitation's
 * token once; a registration key's expiry is printed at creation; tokens
 * show what made them and an owner re-parents one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedOrganization, CreatedRegistrationKey, Member, OrgToken } from '../../src/protocol/index.js';
import { runCtl } from '../../src/cli/ctl/index.js';
import { freshConfigPath, TextBuffer } from '../client/support/ctl-runner.js';
import { createUserForTest } from '../server/support/users.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, type RealServer } from './support/real-server.js';

let rs: RealServer;

async function ctl(argv: string[], token = ADMIN_TOKEN): Promise<{ code: number; out: string; err: string }> {
  const stdout = new TextBuffer();
  const stderr = new TextBuffer();
  const code = await runCtl(argv, { stdout, stderr, env: { FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: token, FLEETPLANE_CONFIG: freshConfigPath() } });
  return { code, out: stdout.text, err: stderr.text };
}

beforeAll(async () => {
  rs = await startRealServer();
});
afterAll(async () => {
  await rs?.close();
});

describe('ctl and what made a credential', () => {
  it('orgs create with the admin token prints the owner invitation token once; the owner accepts it', async () => {
    const name = uniqueName('owned');
    const table = await ctl(['orgs', 'create', '--name', name]);
    expect(table.code, table.err).toBe(0);
    expect(table.out).toMatch(/owner_invitation/);
    expect(table.out).toMatch(/fpi_/);
    expect(table.err).toMatch(/owner invitation token .* shown only this once/);
    const json = await ctl(['orgs', 'create', '--name', uniqueName('owned'), '-o', 'json']);
    const org = JSON.parse(json.out) as CreatedOrganization;
    const user = await createUserForTest(rs.server.db);
    const accepted = await ctl(['invitations', 'accept', org.owner_invitation?.token ?? '', '-o', 'json'], user.session);
    expect(accepted.code, accepted.err).toBe(0);
    expect(JSON.parse(accepted.out) as Member).toMatchObject({ user_id: user.id, organization_id: org.id, role: 'owner' });
    // Named at creation: an owner at once, nothing to hand over.
    const other = await createUserForTest(rs.server.db);
    const named = await ctl(['orgs', 'create', '--name', uniqueName('owned'), '--owner-user-id', other.id, '-o', 'json']);
    expect(named.code, named.err).toBe(0);
    expect((JSON.parse(named.out) as CreatedOrganization).owner_invitation).toBeUndefined();
  });

  it('registration-keys create prints when the key expires', async () => {
    const name = uniqueName('keys');
    await ctl(['orgs', 'create', '--name', name]);
    const res = await ctl(['registration-keys', 'create', '--org', name, '--description', 'rack 4']);
    expect(res.code, res.err).toBe(0);
    const expires = /^expires_at: +(\S+)$/m.exec(res.out)?.[1];
    expect(Number.isNaN(Date.parse(expires ?? ''))).toBe(false);
    expect(res.err).toContain(`note: the key expires at ${expires ?? ''}`);
    const json = await ctl(['registration-keys', 'create', '--org', name, '-o', 'json']);
    expect((JSON.parse(json.out) as CreatedRegistrationKey).expires_at).not.toBeNull();
  });

  it('tokens list -o wide shows what made each; tokens reparent makes it rest on the caller', async () => {
    const owner = await createUserForTest(rs.server.db);
    const name = uniqueName('tokens');
    await ctl(['orgs', 'create', '--name', name, '--owner-user-id', owner.id]);
    const made = await ctl(['tokens', 'create', '--org', name, '--role', 'read', '--description', 'ci', '-o', 'json'], owner.session);
    expect(made.code, made.err).toBe(0);
    const token = JSON.parse(made.out) as OrgToken;
    expect(token.created_by.credential_kind).toBe('session');
    const wide = await ctl(['tokens', 'list', '--org', name, '-o', 'wide'], owner.session);
    expect(wide.out).toMatch(/MADE BY/);
    expect(wide.out).toContain(`session ${token.created_by.credential_id ?? ''}`);
    const moved = await ctl(['tokens', 'reparent', 'ci', '--org', name, '-o', 'json'], owner.session);
    expect(moved.code, moved.err).toBe(0);
    expect((JSON.parse(moved.out) as OrgToken).created_by).toEqual({ credential_kind: 'user', credential_id: null, user_id: owner.id });
  });
});
