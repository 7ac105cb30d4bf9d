/**
 * Issue 37, "An audit browser": the organization's history with filters by
 * object (by name), kind and action, each entry with its values before and
 * after and a link to its object. Real server, real Chromium.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, screenshot, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_audit_admin_token';
const key = (): string => randomBytes(32).toString('base64');

describe.runIf(hasChromium())('the audit browser, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('finds an object by name, shows what changed before and after, links to it, and says when a name matches nothing', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `audit-${process.pid}` })).id;
    const device = await admin.devices.create(org, { hostname: 'web-1', public_key: key() });
    await admin.devices.update(org, device.id, { hostname: 'web-2' });
    await admin.devices.update(org, device.id, { tags: ['tag:web'] });
    await admin.securityGroups.create(org, { name: 'db', description: 'databases', inbound_rules: [], outbound_rules: [] });

    const { page, problems } = await browser.newPage();
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}/audit`);
    await page.getByTestId('audit-row').first().waitFor();
    // Newest first, every kind.
    expect(await page.getByTestId('audit-row').first().getAttribute('data-kind')).toBe('security_group');

    // By the device's name now: its creation and both updates, each with before → after.
    await page.getByTestId('audit-object').fill('web-2');
    await page.getByTestId('audit-apply').click();
    await until(async () => (await page.getByTestId('audit-row').count()) === 3, 'the device’s three entries');
    const changes = await page.getByTestId('audit-changes').allInnerTexts();
    expect(changes[0]).toContain('tags: [] → ["tag:web"]');
    expect(changes[1]).toContain('hostname: web-1 → web-2');
    expect(await page.getByTestId('audit-object-name').first().getByRole('link').getAttribute('href')).toBe(`#/orgs/${org}/devices/${device.id}`);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'audit-log');

    // Only updates.
    await page.getByTestId('audit-action').selectOption('update');
    await page.getByTestId('audit-apply').click();
    await until(async () => (await page.getByTestId('audit-row').count()) === 2, 'the two updates');

    // A name nothing has: said, not an empty list that looks like no history.
    await page.getByTestId('audit-object').fill('no-such-device');
    await page.getByTestId('audit-apply').click();
    await page.getByTestId('audit-unknown-object').waitFor();
    expect(await page.getByTestId('audit-row').count()).toBe(0);
    expect(problems).toEqual([]);
  }, 120_000);
});
