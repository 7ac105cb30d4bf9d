/**
 * Issue 37, "The frame" and "The identity-provider button": the header names
 * the organization and switches to another at the same view, on one line at
 * 1280 px (the user's controls behind its Account menu), its tabs on a line
 * of their own when narrower; the sign-in page offers the identity provider
 * only when the server has one (the public `GET /api/auth/methods`). Real
 * server, real Chromium.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { paths } from '../../src/protocol/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_frame_admin_token';

/**
 * The header's lines: the distinct vertical centers of its items and tabs
 * (centered in a line, they differ by a pixel at most), and whether it
 * holds them in its height and the page's width.
 */
async function headerLayout(page: Page): Promise<{ lines: number; height: number; lineHeight: number; overflows: boolean }> {
  return page.evaluate(() => {
    const header = document.querySelector('header.top');
    if (!header) throw new Error('no header');
    const items = [...header.children, ...header.querySelectorAll('nav.tabs a')].map((e) => e.getBoundingClientRect()).filter((r) => r.height > 0);
    const centers: number[] = [];
    for (const r of items) {
      const c = r.top + r.height / 2;
      if (!centers.some((x) => Math.abs(x - c) <= 2)) centers.push(c);
    }
    const style = getComputedStyle(header);
    const chrome = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom) + parseFloat(style.borderTopWidth) + parseFloat(style.borderBottomWidth);
    return {
      lines: centers.length,
      height: header.getBoundingClientRect().height,
      lineHeight: Math.max(...items.map((r) => r.height)) + chrome,
      overflows: document.documentElement.scrollWidth > innerWidth || items.some((r) => r.left < 0 || r.right > innerWidth),
    };
  });
}

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

  it('fits the header on one line at 1280 px with a long organization name; narrower, the tabs take their own line; the Account menu holds the user’s controls', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const long = `production-eu-west-1-payments-and-billing-platform-${process.pid}`;
    const org = (await admin.organizations.create({ name: long })).id;
    await admin.organizations.create({ name: `frame-other-${process.pid}` });
    const { page, problems } = await browser.newPage();
    expect(page.viewportSize()).toEqual({ width: 1280, height: 800 });
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}/devices`);
    const switcher = page.getByTestId('org-switch');
    await until(async () => (await switcher.count()) === 1 && (await switcher.locator('option:checked').innerText()) === long, 'the switcher names the organization');

    const wide = await headerLayout(page);
    expect(wide.lines, 'brand, organization, tabs and the Account menu on one line').toBe(1);
    expect(wide.height).toBeLessThanOrEqual(wide.lineHeight + 1);
    expect(wide.overflows).toBe(false);
    expect(await switcher.getAttribute('title')).toBe(long);

    // The Account menu: the user's controls, closed by Escape (the focus back on its button), a click outside, and a choice.
    const menu = page.getByTestId('account-menu');
    expect(await page.getByTestId('sign-out').isVisible()).toBe(false);
    await menu.click();
    await page.getByTestId('sign-out').waitFor();
    expect(await page.getByTestId('theme-toggle').isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await page.getByTestId('sign-out').waitFor({ state: 'hidden' });
    expect(await menu.evaluate((e) => e === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByTestId('me-link').waitFor();
    await page.getByRole('heading', { level: 1 }).click();
    await page.getByTestId('me-link').waitFor({ state: 'hidden' });
    await menu.click();
    await page.getByTestId('me-link').click();
    await until(async () => page.url().endsWith('#/me'), 'the keys and sessions view');
    await page.getByTestId('me-link').waitFor({ state: 'hidden' });
    // A choice taken at once, before the page has rendered the opening, closes it as well.
    await page.evaluate((to) => {
      document.querySelector<HTMLElement>('[data-testid="account-menu"]')?.click();
      location.hash = to;
    }, `#/orgs/${org}/devices`);
    await page.evaluate(() => new Promise<void>((done) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 100)))));
    expect(await page.locator('details.account-menu').evaluate((e) => (e as HTMLDetailsElement).open)).toBe(false);

    // Narrower: brand, organization and the menu on the first line, the tabs below; nothing leaves the page, the menu's items included.
    await page.goto(`${url}/#/orgs/${org}/devices`);
    await page.setViewportSize({ width: 800, height: 800 });
    await switcher.waitFor();
    const narrow = await headerLayout(page);
    expect(narrow.lines).toBe(2);
    expect(narrow.overflows).toBe(false);
    const tabsTop = (await page.locator('nav.tabs').boundingBox())?.y ?? 0;
    expect((await menu.boundingBox())?.y ?? Infinity).toBeLessThan(tabsTop);
    await menu.click();
    const items = await page.locator('.account-menu-items').boundingBox();
    expect(items?.x ?? -1).toBeGreaterThanOrEqual(0);
    expect((items?.x ?? 0) + (items?.width ?? Infinity)).toBeLessThanOrEqual(800);
    await page.getByRole('link', { name: 'Security groups' }).click();
    await until(async () => page.url().endsWith(`#/orgs/${org}/security-groups`), 'a tab still works');
    await page.getByTestId('sign-out').waitFor({ state: 'hidden' });
    expect(problems).toEqual([]);
  }, 120_000);
});
