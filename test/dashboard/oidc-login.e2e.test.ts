/**
 * The dashboard's sign-in through the identity provider, in Chromium: a real
 * OpenID provider process (oidc-provider), a listening server with user
 * login, and the browser following the authorization code flow from the
 * dashboard's link back to the dashboard, signed in by its session cookie.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useLoginServer } from '../identity/support/login-server.js';
import { ensureDashboardBuilt, hasChromium, launchBrowser, screenshot, type TestBrowser } from './support/browser.js';

describe.runIf(hasChromium())('the dashboard signs in through the identity provider', () => {
  const login = useLoginServer();
  let browser: TestBrowser;
  beforeAll(async () => {
    ensureDashboardBuilt();
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('from the sign-in page to the provider and back, signed in by an HttpOnly session cookie', async () => {
    const { origin } = login.get();
    const { page, context } = await browser.newPage();
    await page.goto(origin);
    await page.getByRole('link', { name: /identity provider/ }).click();
    // At the provider: alice signs in, then consents when asked.
    const username = page.locator('input[name="username"]');
    await username.waitFor();
    await username.fill('alice');
    await username.press('Enter');
    await page.waitForURL((u) => u.origin === origin || u.pathname.includes('/interaction/'), { timeout: 20_000 });
    if (new URL(page.url()).origin !== origin) {
      await page.locator('form#confirm').evaluate((f) => (f as HTMLFormElement).submit());
      await page.waitForURL((u) => u.origin === origin, { timeout: 20_000 });
    }
    // Back on the dashboard, signed in: alice is a server admin and may create an organization.
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    await page.getByTestId('org-name').fill(`oidc-${process.pid}`);
    await page.getByTestId('org-create').click();
    await page.getByTestId('fleet-at-head').waitFor();
    await screenshot(page, 'oidc-signed-in');
    const cookies = await context.cookies(origin);
    const session = cookies.find((c) => c.name === 'fleetplane_session');
    expect(session?.httpOnly).toBe(true);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    await context.close();
  }, 90_000);
});
