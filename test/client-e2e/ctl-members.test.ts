/**
 * `fleetplane ctl members`, `ctl invitations` and `ctl api-keys` against a real
 * server, with a user's session as the token (made by SQL, as a login would).
 * The first command runs as a real process (the session token from its
 * environment); the rest run in process through `runCtl`, the function that
 * process calls: ctl-process.test.ts covers what a process adds (exit codes,
 * stdout and stderr), and a process start costs seconds under load.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKey, CreatedApiKey, Invitation, Member } from '../../src/protocol/index.js';
import { ctlAt } from '../client/support/ctl-runner.js';
import { buildDist, fleetplane } from '../support/fleetplane-process.js';
import { addMemberForTest, createUserForTest } from '../server/support/users.js';
import { startRealServer, uniqueName, type RealServer } from './support/real-server.js';
import { scratchDir } from '../support/scratch-dir.js';

let rs: RealServer;

function runProcess(args: readonly string[], token: string) {
  const config = join(scratchDir('ctl-members'), 'config.json');
  return fleetplane(['ctl', ...args], { FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: token, FLEETPLANE_CONFIG: config }).exit;
}

async function run(args: readonly string[], token: string) {
  const { code, out, err } = await ctlAt(rs.url, token, [...args]);
  return { code, stdout: out, stderr: err };
}

beforeAll(async () => {
  await buildDist();
  rs = await startRealServer();
}, 180_000);
afterAll(async () => {
  await rs?.close();
});

describe('ctl members, invitations and api-keys', () => {
  it('lists and changes members, invites and revokes, creates a key shown once, lists and revokes it', async () => {
    const name = uniqueName('ctl-members');
    const owner = await createUserForTest(rs.server.db, { email: 'owner@example.test' });
    const other = await createUserForTest(rs.server.db, { email: 'other@example.test' });
    const org = (await rs.admin.organizations.create({ name, owner_user_id: owner.id })).id;
    await addMemberForTest(rs.server.db, org, owner.id, 'owner');
    await addMemberForTest(rs.server.db, org, other.id, 'read');

    const listed = await runProcess(['members', 'list', '--org', name, '-o', 'json'], owner.session);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as Member[]).map((m) => m.role).sort()).toEqual(['owner', 'read']);
    const promoted = await run(['members', 'set-role', 'other@example.test', '--role', 'admin', '--org', name, '-o', 'json'], owner.session);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect((JSON.parse(promoted.stdout) as Member).role).toBe('admin');
    // The last owner stays: 409 conflict, a non-zero exit naming it.
    const lastOwner = await run(['members', 'set-role', owner.id, '--role', 'read', '--org', name], owner.session);
    expect(lastOwner.code).not.toBe(0);
    expect(lastOwner.stderr).toMatch(/owner/);

    const invited = await run(['invitations', 'create', '--email', 'new@example.test', '--role', 'read', '--org', name, '-o', 'json'], owner.session);
    expect(invited.code, invited.stderr).toBe(0);
    expect((JSON.parse(invited.stdout) as Invitation).email).toBe('new@example.test');
    expect((await run(['invitations', 'create', '--email', 'a@example.test', '--subject', 's', '--role', 'read', '--org', name], owner.session)).code).not.toBe(0);
    // Neither: an invitation claimed by its token, printed once; the invitee accepts it signed in.
    const byToken = await run(['invitations', 'create', '--role', 'read', '--org', name, '-o', 'json'], owner.session);
    expect(byToken.code, byToken.stderr).toBe(0);
    const token = (JSON.parse(byToken.stdout) as { token: string }).token;
    const invitee = await createUserForTest(rs.server.db, { email: 'invitee@example.test' });
    const accepted = await run(['invitations', 'accept', token, '-o', 'json'], invitee.session);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(JSON.parse(accepted.stdout) as Member).toMatchObject({ user_id: invitee.id, organization_id: org, role: 'read' });
    const revoked = await run(['invitations', 'revoke', 'new@example.test', '--org', name], owner.session);
    expect(revoked.code, revoked.stderr).toBe(0);
    const open = await run(['invitations', 'list', '--org', name, '-o', 'json'], owner.session);
    expect(JSON.parse(open.stdout)).toEqual([]);

    const created = await run(['api-keys', 'create', '--organizations', name, '--role', 'read', '--description', 'ci', '-o', 'json'], owner.session);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout) as CreatedApiKey;
    expect(key.organizations).toEqual([org]);
    expect(key.key).toMatch(/^fpk_/);
    // The key reads as its user; it mints no key.
    const viaKey = await run(['members', 'list', '--org', org, '-o', 'json'], key.key);
    expect(viaKey.code, viaKey.stderr).toBe(0);
    expect((await run(['api-keys', 'create', '--organizations', org, '--role', 'read'], key.key)).code).not.toBe(0);
    const keys = await run(['api-keys', 'list', '-o', 'json'], owner.session);
    expect((JSON.parse(keys.stdout) as ApiKey[]).map((k) => k.id)).toEqual([key.id]);
    expect(keys.stdout).not.toContain(key.key);
    const gone = await run(['api-keys', 'revoke', 'ci'], owner.session);
    expect(gone.code, gone.stderr).toBe(0);
    expect((await run(['members', 'list', '--org', org], key.key)).code).not.toBe(0);

    const removed = await run(['members', 'remove', 'other@example.test', '--org', name], owner.session);
    expect(removed.code, removed.stderr).toBe(0);
  });
});
