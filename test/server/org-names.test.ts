/**
 * Issue 37, part 4 "Unique names" (docs/protocol.md "Changes", v1.16): an
 * organization's name is unique among live organizations, and only the
 * admin renames one, so no tenant learns another tenant's names (the
 * concern of issue 12 and v1.4, which made names labels).
 */
import { describe, expect, it } from 'vitest';
import { paths, type Organization } from '../../src/protocol/index.js';
import { backends, errorCode, uniqueName, useServer } from './fixtures.js';
import { addMemberForTest, createUserForTest } from './support/users.js';

interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

describe.each(backends())('organization names on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    it('a second live organization with a name gets 409 already_exists naming /name; a deleted one frees it', async () => {
      const s = h();
      const label = uniqueName('twin');
      const first = await s.createOrg({ name: label });
      const twice = await s.call('POST', paths.organizations(), { token: s.admin, body: { name: label } });
      expect([twice.statusCode, errorCode(twice), twice.json<ErrorBody>().error.details], twice.body).toEqual([409, 'already_exists', { path: '/name' }]);
      // Exact match: another case is another name.
      expect((await s.createOrg({ name: label.toUpperCase() })).name).toBe(label.toUpperCase());
      const { items } = await s.ok<{ items: Organization[] }>(200, 'GET', paths.organizations());
      expect(items.filter((o) => o.name === label).map((o) => o.id)).toEqual([first.id]);
      await s.ok(204, 'DELETE', paths.organization(first.id));
      expect((await s.createOrg({ name: label })).name).toBe(label);
    });

    it('creates racing with one name: one wins, the others get 409 already_exists from the unique index, never a 500', async () => {
      const s = h();
      const label = uniqueName('race');
      const all = await Promise.all([1, 2, 3, 4].map(() => s.call('POST', paths.organizations(), { token: s.admin, body: { name: label } })));
      expect(all.map((r) => [r.statusCode, errorCode(r)]).sort()).toEqual([
        [201, undefined],
        [409, 'already_exists'],
        [409, 'already_exists'],
        [409, 'already_exists'],
      ]);
    });

    it('the admin renaming to a taken name gets 409 already_exists; to a free one, 200', async () => {
      const s = h();
      const mine = await s.createOrg();
      const theirs = await s.createOrg();
      const taken = await s.call('PATCH', paths.organization(mine.id), { token: s.admin, body: { name: theirs.name } });
      expect([taken.statusCode, errorCode(taken), taken.json<ErrorBody>().error.details], taken.body).toEqual([409, 'already_exists', { path: '/name' }]);
      const free = uniqueName('free');
      expect((await s.ok<Organization>(200, 'PATCH', paths.organization(mine.id), { body: { name: free } })).name).toBe(free);
    });

    it('an organization token or member may not rename its organization (403 whether or not the name is taken), but changes the rest', async () => {
      const s = h();
      const mine = await s.createOrg();
      const theirs = await s.createOrg();
      const token = await s.createToken(mine.id, 'admin');
      const owner = await createUserForTest(s.server.db);
      await addMemberForTest(s.server.db, mine.id, owner.id, 'owner');
      for (const credential of [token, owner.session]) {
        const taken = await s.call('PATCH', paths.organization(mine.id), { token: credential, body: { name: theirs.name } });
        const free = await s.call('PATCH', paths.organization(mine.id), { token: credential, body: { name: uniqueName('free') } });
        expect([taken.statusCode, errorCode(taken), free.statusCode, errorCode(free)], taken.body).toEqual([403, 'forbidden', 403, 'forbidden']);
        expect(taken.json<ErrorBody>().error).toEqual(free.json<ErrorBody>().error);
        expect(taken.json<ErrorBody>().error.message).toMatch(/only the admin/);
        // Sending its own name back is no rename (a form that sends every field).
        const same = await s.call('PATCH', paths.organization(mine.id), { token: credential, body: { name: mine.name, description: 'still mine' } });
        expect([same.statusCode, same.json<Organization>().name], same.body).toEqual([200, mine.name]);
      }
      // A server admin's session is the admin.
      const serverAdmin = await createUserForTest(s.server.db, { serverAdmin: true });
      const renamed = uniqueName('by-server-admin');
      const res = await s.call('PATCH', paths.organization(mine.id), { token: serverAdmin.session, body: { name: renamed } });
      expect([res.statusCode, res.json<Organization>().name], res.body).toEqual([200, renamed]);
    });
  });
});
