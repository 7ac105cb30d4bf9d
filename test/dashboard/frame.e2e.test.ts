/**
 * Issue 37, "The frame" and "The identity-provider button": the header names
 * the organization and switches to another at the same view; the sign-in
 * page offers the identity provider only when the server has one (the
 * public `GET /api/auth/methods`). Real server, real Chromium.
 */
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { paths } from '../../src/protocol/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, seriousViolations } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_frame_admin_token';

describe.runIf(hasChromium())('the dashboard’s frame, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('offers no identity provider on a server without one, names the organization and switches to another at the same view', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    expect(await admin.auth.loginMethods()).toEqual({ token: true, oidc: false });
    const a = (await admin.organizations.create({ name: `frame-a-${process.pid}` })).id;
    const b = (await admin.organizations.create({ name: `frame-b-${process.pid}` })).id;

    const { page, problems } = await browser.newPage();
    // The page asks how one may sign in as it opens: once answered, the button must not be there.
    const methods = page.waitForResponse((r) => new URL(r.url()).pathname === paths.authMethods());
    await page.goto(url);
    await page.getByTestId('login-token').waitFor();
    expect((await methods).status()).toBe(200);
    expect(await page.getByTestId('login-oidc').count()).toBe(0);
    expect(await page.getByRole('link', { name: /identity provider/ }).count()).toBe(0);
    await page.getByTestId('login-token').fill(ADMIN);
    await page.getByTestId('login-submit').click();
    await page.getByTestId('orgs-row').first().waitFor();

    await page.goto(`${url}/#/orgs/${a}/security-groups`);
    const switcher = page.getByTestId('org-switch');
    await switcher.waitFor();
    await until(async () => (await switcher.locator('option:checked').innerText()) === `frame-a-${process.pid}`, 'the header names the organization');
    expect(await seriousViolations(page)).toEqual([]);
    await switcher.selectOption(b);
    await until(async () => page.url().endsWith(`#/orgs/${b}/security-groups`), 'the same view of the other organization');
    await until(async () => (await switcher.locator('option:checked').innerText()) === `frame-b-${process.pid}`, 'the header names the other');
    expect(problems).toEqual([]);
  }, 120_000);
});
