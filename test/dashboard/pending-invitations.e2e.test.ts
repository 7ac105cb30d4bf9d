/**
 * Issue 37: the members view lists only pending invitations. The owner
 * invitation the admin token's organization was made with stands in for an
 * owner; once the first owner joins (here made owner in the view) it is
 * gone from the list at once, while an invitation still to be accepted
 * stays; the owner, signed in, sees only that one. Real server, real
 * Chromium.
 */
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { COOKIES, HEADERS, MEDIA, paths } from '../../src/protocol/index.js';
import { until } from '../agent/support/harness.js';
import { addMemberForTest, createUserForTest } from '../server/support/users.js';
import { hasChromium, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_pending_invitations_admin';

describe.runIf(hasChromium())('pending invitations in the dashboard, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('the owner invitation that stood in for an owner leaves the list when the first owner joins; pending ones stay', async () => {
    const { url, server, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const created = await admin.organizations.create({ name: `pending-${process.pid}` });
    const standIn = created.owner_invitation?.id ?? '';
    expect(standIn).not.toBe('');
    const pending = await admin.members.invite(created.id, { email: `later-${process.pid}@example.test`, role: 'read' });
    const user = await createUserForTest(server.db, { email: `owner-${process.pid}@example.test` });
    await addMemberForTest(server.db, created.id, user.id, 'admin');

    const { page, problems } = await browser.newPage();
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${created.id}/members`);
    const rows = page.getByTestId('invitation-row');
    const listed = async (): Promise<(string | null)[]> => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-invitation-id')));
    await until(async () => (await listed()).length === 2, 'the owner invitation and the pending one listed');
    expect(await listed()).toEqual([standIn, pending.id]);

    const member = page.locator(`[data-testid="member-row"][data-user-id="${user.id}"]`);
    await member.getByTestId('member-role-select').selectOption('owner');
    await member.getByTestId('member-role-save').click();
    await page.getByTestId('members-saved').waitFor();
    await until(async () => (await listed()).length === 1, 'the owner invitation gone without a reload');
    expect(await listed()).toEqual([pending.id]);
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);

    // The owner, signed in: no invitation of its own, only the pending one.
    const owner = await browser.newPage();
    await owner.context.addCookies([{ name: COOKIES.session, value: user.session, url, httpOnly: true }]);
    await owner.page.goto(`${url}/#/orgs/${created.id}/members`);
    await owner.page.locator(`[data-testid="member-row"][data-user-id="${user.id}"]`).waitFor();
    await owner.page.getByTestId('invitation-row').first().waitFor();
    expect(await owner.page.getByTestId('invitation-row').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-invitation-id')))).toEqual([pending.id]);
    expect(owner.problems).toEqual([]);
  }, 120_000);

  it('an organization created with the admin token shows its owner invitation once, and that token makes its owner', async () => {
    const { url, server, browser } = env();
    const { page, problems } = await browser.newPage();
    await signIn(page, url, ADMIN);
    const name = `made-here-${process.pid}`;
    await page.getByTestId('org-name').fill(name);
    await page.getByTestId('org-create').click();
    const shown = page.getByTestId('org-owner-invitation');
    await shown.waitFor();
    expect(await shown.textContent()).toContain(`${name} was created without an owner`);
    const token = (await shown.getByTestId('secret-value').textContent())?.trim() ?? '';
    expect(token).toMatch(/^fpi_/);
    expect(await seriousViolations(page)).toEqual([]);
    await shown.getByRole('button', { name: 'Done' }).click();
    await page.getByTestId('fleet-at-head').waitFor();

    // The token shown is the invitation's: a signed-in user who presents it becomes the owner.
    const org = new URL(page.url()).hash.split('/')[2] ?? '';
    const user = await createUserForTest(server.db, { email: `made-here-${process.pid}@example.test` });
    const res = await fetch(`${url}${paths.acceptInvitation()}`, {
      method: 'POST',
      headers: { [HEADERS.cookie]: `${COOKIES.session}=${user.session}`, [HEADERS.contentType]: MEDIA.json, [HEADERS.origin]: url },
      body: JSON.stringify({ token }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    expect((await admin.members.list(org)).map((m) => [m.user_id, m.role])).toEqual([[user.id, 'owner']]);
    expect(problems).toEqual([]);
  }, 120_000);
});
