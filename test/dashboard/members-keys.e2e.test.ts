/**
 * Issue 37, "The views operators expect": an organization's members and
 * invitations (invite, revoke, a member's role and removal, a read token
 * seeing the server's refusal), and a signed-in user's own personal API
 * keys and sessions (a key's secret shown once and working, revoked and no
 * longer working; sessions listed, the current one marked, one revoked);
 * with an admin token, why there are none. Real server, real Chromium,
 * axe-core in light and dark.
 */
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { COOKIES } from '../../src/protocol/index.js';
import { until } from '../agent/support/harness.js';
import { addMemberForTest, createSessionForTest, createUserForTest } from '../server/support/users.js';
import { hasChromium, openAccountMenu, screenshot, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_members_keys_admin_token';

describe.runIf(hasChromium())('members, invitations, API keys and sessions in the dashboard, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  async function signedIn(url: string, token: string, colorScheme: 'light' | 'dark' = 'light') {
    const { page, problems } = await env().browser.newPage({ colorScheme });
    await signIn(page, url, token);
    return { page, problems };
  }

  it('invites, lists and revokes invitations, changes a member’s role and removes them; a read token sees the refusal', async () => {
    const { url, server } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `members-${process.pid}` })).id;
    const member = await createUserForTest(server.db, { email: `member-${process.pid}@example.test` });
    await addMemberForTest(server.db, org, member.id, 'read');
    const { page, problems } = await signedIn(url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}`);
    await page.getByRole('link', { name: 'Members' }).click();
    const row = page.locator(`[data-testid="member-row"][data-user-id="${member.id}"]`);
    await row.getByText(member.email ?? '').waitFor();

    // Invite by email: listed in the view and on the server.
    const email = `invitee-${process.pid}@example.test`;
    await page.getByTestId('invite-value').fill(email);
    await page.getByTestId('invite-role').selectOption('admin');
    await page.getByTestId('invite-submit').click();
    await page.getByTestId('invitations-saved').getByText(`Invited ${email} as admin`).waitFor();
    const invitation = page.locator('[data-testid="invitation-row"]', { hasText: email });
    await invitation.waitFor();
    // (An organization the admin token created also has its owner's invitation, by token.)
    const invited = async (): Promise<string[]> => (await admin.members.invitations(org)).filter((i) => i.email === email).map((i) => i.role);
    expect(await invited()).toEqual(['admin']);

    // A malformed email: the server's words at the field.
    await page.getByTestId('invite-value').fill('not an email');
    await page.getByTestId('invite-submit').click();
    await page.locator('[data-path="/email"]').waitFor();

    // By token: the token is shown once, and it is the real one (a user accepts it).
    await page.getByTestId('invite-kind').selectOption('token');
    await page.getByTestId('invite-role').selectOption('read');
    await page.getByTestId('invite-submit').click();
    const token = (await page.getByTestId('secret-value').textContent())?.trim() ?? '';
    const invitee = await createUserForTest(server.db);
    const accepted = await new FleetplaneClient({ baseUrl: url, token: invitee.session }).members.acceptInvitation(token);
    expect([accepted.user_id, accepted.role]).toEqual([invitee.id, 'read']);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('secret-value').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'members');

    // Revoke asks first, then the invitation is gone here and on the server.
    await invitation.getByTestId('invitation-revoke').click();
    expect(await invited()).toEqual(['admin']);
    await invitation.getByTestId('invitation-revoke-confirm').click();
    await page.getByTestId('invitations-saved').getByText(`Revoked the invitation of ${email}`).waitFor();
    await until(async () => (await invited()).length === 0, 'the invitation revoked');
    await until(async () => (await invitation.count()) === 0, 'the view follows');

    // A role change, Save by keyboard: confirmed, and on the server.
    await row.getByTestId('member-role-select').selectOption('admin');
    await row.getByTestId('member-role-save').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('members-saved').getByText(/is now admin$/).waitFor();
    await until(async () => (await admin.members.list(org)).find((m) => m.user_id === member.id)?.role === 'admin', 'the role changed');

    // Removal asks first.
    await row.getByTestId('member-remove').click();
    expect((await admin.members.list(org)).some((m) => m.user_id === member.id)).toBe(true);
    await row.getByTestId('member-remove-confirm').click();
    await page.getByTestId('members-saved').getByText(/^Removed /).waitFor();
    await until(async () => !(await admin.members.list(org)).some((m) => m.user_id === member.id), 'the member removed');
    await until(async () => (await row.count()) === 0, 'the view follows');
    expect(problems).toEqual([]);

    // A read token: members listed; invitations and changes refused in the server's words, nothing broken.
    const read = await admin.tokens.create(org, { role: 'read', description: 'reader' });
    const reader = await signedIn(url, read.token, 'dark');
    await reader.page.goto(`${url}/#/orgs/${org}/members`);
    const invitedRow = reader.page.locator(`[data-testid="member-row"][data-user-id="${invitee.id}"]`);
    await invitedRow.waitFor();
    await reader.page.getByRole('alert').filter({ hasText: 'Could not list the invitations' }).getByText(/\(403 forbidden\)/).waitFor();
    await invitedRow.getByTestId('member-role-select').selectOption('admin');
    await invitedRow.getByTestId('member-role-save').click();
    await reader.page.getByRole('alert').filter({ hasText: 'Not saved' }).getByText(/\(403 forbidden\)/).waitFor();
    expect((await admin.members.list(org)).find((m) => m.user_id === invitee.id)?.role).toBe('read');
    expect(await seriousViolations(reader.page)).toEqual([]);
    expect(reader.problems).toEqual([]);
  }, 120_000);

  it('a user’s own API keys (the secret shown once, working, then revoked) and sessions (the current one marked, another revoked)', async () => {
    const { url, server } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = await admin.organizations.create({ name: `keys-${process.pid}` });
    const user = await createUserForTest(server.db);
    await addMemberForTest(server.db, org.id, user.id, 'admin');
    const other = await createSessionForTest(server.db, user.id);
    const current = (await new FleetplaneClient({ baseUrl: url, token: user.session }).auth.session()).session.id;
    const otherId = (await new FleetplaneClient({ baseUrl: url, token: other }).auth.session()).session.id;

    for (const colorScheme of ['light', 'dark'] as const) {
      const { page, context, problems } = await env().browser.newPage({ colorScheme });
      // As a login through the identity provider leaves it: the session in its HttpOnly cookie.
      await context.addCookies([{ name: COOKIES.session, value: user.session, url, httpOnly: true }]);
      await page.goto(url);
      await page.getByTestId('orgs-row').first().waitFor();
      // By keyboard: the Account menu opens with Enter, and its link follows with Enter.
      await page.getByTestId('account-menu').focus();
      await page.keyboard.press('Enter');
      await page.getByTestId('me-link').focus();
      await page.keyboard.press('Enter');
      await page.locator(`[data-testid="session-row"][data-session-id="${current}"]`).getByTestId('session-current').waitFor();
      expect(await page.locator('[data-testid="session-row"][data-current="true"]').count()).toBe(1);
      await page.getByTestId('api-keys-table').or(page.getByText('No personal API keys')).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      expect(problems).toEqual([]);
      if (colorScheme === 'dark') {
        // Sign out ends the user's session on the server, not only the cookie in this browser.
        await openAccountMenu(page);
        await page.getByTestId('sign-out').click();
        await page.getByTestId('login-token').waitFor();
        await expect(new FleetplaneClient({ baseUrl: url, token: user.session }).auth.session()).rejects.toMatchObject({ status: 401 });
        break;
      }

      // No organization chosen: the server's words at the field, no key.
      await page.getByTestId('api-key-create').click();
      await page.locator('[data-path="/organizations"]').waitFor();

      await page.getByLabel(org.name).check();
      await page.getByTestId('api-key-description').fill('ci runner');
      await page.getByTestId('api-key-create').click();
      const secret = (await page.getByTestId('secret-value').textContent())?.trim() ?? '';
      const keyClient = new FleetplaneClient({ baseUrl: url, token: secret });
      expect((await keyClient.organizations.list()).items.map((o) => o.id)).toEqual([org.id]);
      const keyRow = page.locator('[data-testid="api-key-row"]', { hasText: 'ci runner' });
      await keyRow.getByText(org.name).waitFor();
      await page.getByRole('button', { name: 'Done' }).click();
      expect(await page.getByTestId('secret-value').count()).toBe(0);
      await page.reload();
      await keyRow.waitFor();
      expect(await page.getByTestId('secret-value').count()).toBe(0);

      // Revoke asks first; then the key no longer authenticates.
      await keyRow.getByTestId('api-key-revoke').click();
      expect((await keyClient.organizations.list()).items).toHaveLength(1);
      await keyRow.getByTestId('api-key-revoke-confirm').click();
      await page.getByTestId('api-keys-saved').getByText('Revoked the key ci runner').waitFor();
      await expect(keyClient.organizations.list()).rejects.toMatchObject({ status: 401 });
      await until(async () => (await keyRow.count()) === 0, 'the key leaves the list');

      // The other session: revoked after asking; it no longer authenticates, this one still does.
      const otherRow = page.locator(`[data-testid="session-row"][data-session-id="${otherId}"]`);
      await otherRow.getByTestId('session-revoke').click();
      await otherRow.getByTestId('session-revoke-confirm').click();
      await page.getByTestId('sessions-saved').waitFor();
      await expect(new FleetplaneClient({ baseUrl: url, token: other }).auth.session()).rejects.toMatchObject({ status: 401 });
      await until(async () => (await otherRow.count()) === 0, 'the session leaves the list');
      expect((await new FleetplaneClient({ baseUrl: url, token: user.session }).auth.session()).session.id).toBe(current);
      expect(problems).toEqual([]);
    }
  }, 120_000);

  it('signed in with the admin token or an API key, says what keys and sessions belong to instead of failing', async () => {
    const { url, server } = env();
    const { page, problems } = await signedIn(url, ADMIN);
    await openAccountMenu(page);
    await page.getByRole('link', { name: 'Your keys and sessions' }).click();
    await page.getByTestId('me-not-a-user').getByText(/belong to users/).waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);

    // A personal API key: its user's keys, no create form, and why no sessions.
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = await admin.organizations.create({ name: `key-signin-${process.pid}` });
    const user = await createUserForTest(server.db);
    await addMemberForTest(server.db, org.id, user.id, 'read');
    const key = await new FleetplaneClient({ baseUrl: url, token: user.session }).apiKeys.create({ organizations: [org.id], role: 'read', description: 'dashboard key' });
    const keyed = await signedIn(url, key.key, 'dark');
    await openAccountMenu(keyed.page);
    await keyed.page.getByTestId('me-link').click();
    await keyed.page.locator(`[data-testid="api-key-row"][data-key-id="${key.id}"]`).waitFor();
    await keyed.page.getByTestId('me-sessions-note').waitFor();
    expect(await keyed.page.getByTestId('api-key-create').count()).toBe(0);
    expect(await keyed.page.getByRole('alert').count()).toBe(0);
    expect(await seriousViolations(keyed.page)).toEqual([]);
    expect(keyed.problems).toEqual([]);
  }, 120_000);
});
