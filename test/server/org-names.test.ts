/**
 * Issue 12, "No name oracle": an organization's name is a label, so no
 * answer depends on the names of organizations the caller can't see
 * (docs/protocol.md "Changes", v1.4).
 */
import { describe, expect, it } from 'vitest';
import { paths, type Organization } from '../../src/protocol/index.js';
import { backends, uniqueName, useServer } from './fixtures.js';

describe.each(backends())('organization names on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    const h = useServer(name);

    // Fix: names are not unique (migration 4 drops objects_org_name; the store no longer maps its violation to 409).
    it("an organization token renaming its organization gets the same answer whether or not another tenant has the name", async () => {
      const s = h();
      const mine = await s.createOrg();
      const theirs = await s.createOrg({ description: 'another tenant' });
      const token = await s.createToken(mine.id, 'admin');

      const taken = await s.call('PATCH', paths.organization(mine.id), { token, body: { name: theirs.name } });
      const free = await s.call('PATCH', paths.organization(mine.id), { token, body: { name: uniqueName('free') } });
      expect([taken.statusCode, free.statusCode], taken.body).toEqual([200, 200]);
      expect(taken.body).not.toContain(theirs.id);

      const back = await s.call('PATCH', paths.organization(mine.id), { token, body: { name: theirs.name } });
      expect(back.json<Organization>().name).toBe(theirs.name);
      expect((await s.ok<Organization>(200, 'GET', paths.organization(theirs.id))).description).toBe('another tenant');
      // Its own list still shows only its organization.
      const listed = await s.call('GET', paths.organizations(), { token });
      expect(listed.json<{ items: Organization[] }>().items.map((o) => o.id)).toEqual([mine.id]);
    });

    it('the admin may create two organizations with one name, and its list has both', async () => {
      const s = h();
      const label = uniqueName('twin');
      const a = await s.createOrg({ name: label });
      const b = await s.createOrg({ name: label });
      const { items } = await s.ok<{ items: Organization[] }>(200, 'GET', paths.organizations());
      expect(items.filter((o) => o.name === label).map((o) => o.id).sort()).toEqual([a.id, b.id].sort());
    });
  });
});
