/**
 * Issue 37: entries about credentials, members and API keys name their
 * object (`object_name`) as entries about devices and groups do: a token's,
 * registration key's or API key's description, a member's email (else its
 * name); null for an empty description, and redacted when a secret was
 * pasted into it (docs/protocol.md "Audit log").
 */
import { describe, expect, it } from 'vitest';
import { AUDIT_REDACTED, paths, type AuditEntry, type AuditList, type CreatedOrgToken } from '../../../src/protocol/index.js';
import { useServer, type Harness } from '../fixtures.js';
import { addMemberForTest, createUserForTest } from '../support/users.js';
import { auditPage } from './audit-support.js';

/** `[action, object_name]` of every entry about `object`, oldest first (organization entries; the server's with `org` undefined). */
async function namesOf(s: Harness, object: string, org?: string): Promise<[string, string | null][]> {
  const page: AuditList = org === undefined ? await s.ok<AuditList>(200, 'GET', paths.audit(), { query: { object } }) : await auditPage(s, org, { object });
  return page.items.reverse().map((e: AuditEntry) => [e.action, e.object_name]);
}

describe('names of credentials, members and API keys in the audit log', () => {
  const h = useServer('pglite');

  it('a registration key and an organization token are named by their description, made, re-parented and ended', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const key = await s.createRegKey(org, { description: 'rack 4 enrollment' });
    await s.ok(200, 'POST', paths.registrationKeyReparent(org, key.id));
    await s.ok(204, 'DELETE', paths.registrationKey(org, key.id));
    expect(await namesOf(s, key.id, org)).toEqual([
      ['create', 'rack 4 enrollment'],
      ['update', 'rack 4 enrollment'],
      ['delete', 'rack 4 enrollment'],
    ]);

    const token = await s.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'admin', description: 'ci deploys' } });
    await s.ok(200, 'POST', paths.tokenReparent(org, token.id));
    await s.ok(204, 'DELETE', paths.token(org, token.id));
    expect(await namesOf(s, token.id, org)).toEqual([
      ['create', 'ci deploys'],
      ['update', 'ci deploys'],
      ['revoke', 'ci deploys'],
    ]);
  });

  it('what a revoked token made is named in the entries that end it', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const maker = await s.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role: 'admin', description: 'maker' } });
    const made = await s.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { token: maker.token, body: { role: 'read', description: 'made token' } });
    const key = await s.ok<{ id: string }>(201, 'POST', paths.registrationKeys(org), { token: maker.token, body: { description: 'made key' } });
    await s.ok(204, 'DELETE', paths.token(org, maker.id));
    expect(await namesOf(s, made.id, org)).toEqual([['create', 'made token'], ['revoke', 'made token']]);
    expect(await namesOf(s, key.id, org)).toEqual([['create', 'made key'], ['delete', 'made key']]);
  });

  it('an empty description names nothing; one holding an issued secret is redacted', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const bare = await s.createRegKey(org);
    const secret = await s.createToken(org, 'read');
    const pasted = await s.createRegKey(org, { description: `for ${secret}` });
    expect(await namesOf(s, bare.id, org)).toEqual([['create', null]]);
    expect(await namesOf(s, pasted.id, org)).toEqual([['create', AUDIT_REDACTED]]);
  });

  it('a member is named by its email, else its name, when its role changes and when it is removed', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const mailed = await createUserForTest(s.server.db);
    const unmailed = await createUserForTest(s.server.db, { email: null });
    for (const u of [mailed, unmailed]) {
      await addMemberForTest(s.server.db, org, u.id, 'read');
      await s.ok(200, 'PATCH', paths.member(org, u.id), { body: { role: 'admin' } });
      await s.ok(204, 'DELETE', paths.member(org, u.id));
    }
    expect(await namesOf(s, mailed.id, org)).toEqual([['update', mailed.email], ['delete', mailed.email]]);
    expect(await namesOf(s, unmailed.id, org)).toEqual([['update', `User ${unmailed.subject}`], ['delete', `User ${unmailed.subject}`]]);
  });

  it('an API key is named by its description, made and revoked, in the server’s log', async () => {
    const s = h();
    const org = (await s.createOrg()).id;
    const user = await createUserForTest(s.server.db);
    await addMemberForTest(s.server.db, org, user.id, 'admin');
    const key = await s.ok<{ id: string }>(201, 'POST', paths.userApiKeys('me'), { token: user.session, body: { organizations: [org], role: 'read', description: 'laptop' } });
    await s.ok(204, 'DELETE', paths.userApiKey('me', key.id), { token: user.session });
    expect(await namesOf(s, key.id)).toEqual([['create', 'laptop'], ['revoke', 'laptop']]);
  });
});
