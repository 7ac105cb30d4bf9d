import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { requireBinary } from '../../support/binaries.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** Debian's Chromium (package `chromium`), or FLEETPLANE_CHROMIUM. */
export const CHROMIUM = process.env['FLEETPLANE_CHROMIUM'] ?? '/usr/bin/chromium';

/** Whether the browser tests run: in CI a missing Chromium fails them loudly; elsewhere they are skipped, loudly. */
export function hasChromium(): boolean {
  return requireBinary(`Chromium (${CHROMIUM}, Debian package chromium)`, existsSync(CHROMIUM));
}

/** The dashboard bundle in dist/dashboard, built when missing (`npm test` builds it before the suite). */
export function ensureDashboardBuilt(): void {
  if (existsSync(join(ROOT, 'dist', 'dashboard', 'index.html'))) return;
  const res = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-dashboard.mjs')], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) throw new Error('the dashboard could not be built');
}

/** A headless Chromium with its own empty profile, removed on close. */
export interface TestBrowser {
  browser: Browser;
  /** `trustAnyCertificate`: for a server whose certificate a test CA signed. */
  newPage(opts?: { colorScheme?: 'light' | 'dark'; trustAnyCertificate?: boolean }): Promise<{ page: Page; context: BrowserContext; problems: string[] }>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  // Playwright gives the browser a new, empty profile in a temporary directory and removes it at close. The flags keep
  // Chromium from reaching out to a network this machine doesn't have, which it would retry at every start.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    browser,
    async newPage(opts = {}) {
      const context = await browser.newContext({
        colorScheme: opts.colorScheme ?? 'light',
        viewport: { width: 1280, height: 800 },
        ignoreHTTPSErrors: opts.trustAnyCertificate ?? false,
      });
      const page = await context.newPage();
      // What the page reports as broken: a test asserts there is none.
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      return { page, context, problems };
    },
    close: () => browser.close(),
  };
}

/** Signs `page` in with `token` from the sign-in page, as an operator pastes it, and waits for the organizations list. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url);
  await page.getByTestId('login-token').fill(token);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('orgs-row').first().waitFor();
}

/** Opens the header's Account menu (the user's keys and sessions, the theme, sign out) and waits for its items. */
export async function openAccountMenu(page: Page): Promise<void> {
  await page.getByTestId('account-menu').click();
  await page.getByTestId('sign-out').waitFor();
}

const AXE_SOURCE: string = (createRequire(import.meta.url)('axe-core') as { source: string }).source;

/** axe-core's violations of serious or critical impact on the page as it is now, one line each. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an injected inline script.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    return (await axe.run(document)).violations;
  });
  return results
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact}: ${v.id} (${v.help}) at ${v.nodes.map((n) => JSON.stringify(n.target)).slice(0, 3).join(', ')}`);
}

/** Where screenshots go: FLEETPLANE_SCREENSHOTS_DIR (docs/screenshots to refresh the README's), else test-results/screenshots. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env['FLEETPLANE_SCREENSHOTS_DIR'] ?? join(ROOT, 'test-results', 'screenshots');
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: false });
}
