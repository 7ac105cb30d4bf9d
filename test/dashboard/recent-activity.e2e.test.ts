/**
 * Issue 37: the overview's recent activity shows the latest changes as it
 * opens, read from the audit log (names as they were: a renamed device's
 * new name, a deleted one's), then follows new ones live, at most ten and
 * none twice; a credential that may not read the audit log sees the live
 * changes and why there are no earlier ones. Real server, real Chromium.
 */
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_recent_activity_admin';
const key = (): string => randomBytes(32).toString('base64');

/** Each row's revision, type, kind and name, top to bottom. */
async function rows(page: Page): Promise<string[]> {
  return page.getByTestId('activity-row').evaluateAll((lis) =>
    lis.map((li) => `${li.getAttribute('data-revision') ?? ''} ${li.getAttribute('data-type') ?? ''} ${li.getAttribute('data-kind') ?? ''} ${li.querySelector('[data-testid="activity-name"]')?.textContent ?? ''}`),
  );
}

describe.runIf(hasChromium())('the overview’s recent activity, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('shows the ten latest changes from the audit log as it opens, then new ones live', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `activity-${process.pid}` })).id;
    const devices = [];
    for (let i = 0; i < 6; i++) devices.push(await admin.devices.create(org, { hostname: `d${i}`, public_key: key() }));
    await admin.securityGroups.create(org, { name: 'web', description: '', inbound_rules: [], outbound_rules: [] });
    await admin.devices.update(org, devices[0]?.id ?? '', { hostname: 'renamed' });
    await admin.devices.delete(org, devices[1]?.id ?? '');
    await admin.organizations.update(org, { description: 'the activity test' });
    await admin.devices.create(org, { hostname: 'd6', public_key: key() });
    // Changes that take no revision are not object changes: not in the panel.
    await admin.registrationKeys.create(org, { description: 'not a change of an object' });

    const { page, problems } = await browser.newPage();
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}`);
    await until(async () => (await rows(page)).length === 10, 'the ten latest changes as the page opens');
    expect(await rows(page)).toEqual([
      '12 created device d6',
      `11 updated organization activity-${process.pid}`,
      '10 deleted device d1',
      '9 updated device renamed',
      '8 created security-group web',
      '7 created device d5',
      '6 created device d4',
      '5 created device d3',
      '4 created device d2',
      '3 created device d1',
    ]);
    // A deleted device has no page to link to; the others do.
    const deleted = page.locator('[data-testid="activity-row"][data-revision="10"] [data-testid="activity-name"]');
    expect(await deleted.evaluate((e) => e.tagName)).toBe('SPAN');
    expect(await page.locator('[data-testid="activity-row"][data-revision="9"] [data-testid="activity-name"]').getAttribute('href')).toBe(`#/orgs/${org}/devices/${devices[0]?.id ?? ''}`);
    expect(await seriousViolations(page)).toEqual([]);

    // Live: on top, the oldest falls off, nothing twice.
    await admin.devices.create(org, { hostname: 'live-1', public_key: key() });
    await until(async () => (await rows(page))[0] === '13 created device live-1', 'the live change on top');
    const after = await rows(page);
    expect(after).toHaveLength(10);
    expect(after.at(-1)).toBe('4 created device d2');
    expect(new Set(after).size).toBe(10);

    // A change made while another view was open is both followed live and in the history read on coming back: listed once.
    await page.getByRole('link', { name: 'Devices' }).click();
    await page.getByTestId('devices-row').first().waitFor();
    await admin.devices.create(org, { hostname: 'while-away', public_key: key() });
    await until(async () => (await page.getByTestId('devices-row').count()) === 8, 'the device listed');
    await page.getByRole('link', { name: 'Overview' }).click();
    await until(async () => (await rows(page))[0] === '14 created device while-away' && (await rows(page)).length === 10, 'the change made on another view, and the history');
    const back = await rows(page);
    expect(back.slice(0, 3)).toEqual(['14 created device while-away', '13 created device live-1', '12 created device d6']);
    expect(back).toHaveLength(10);
    expect(new Set(back).size).toBe(10);
    expect(problems).toEqual([]);
  }, 120_000);

  it('a credential that may not read the audit log sees the live changes and why there are no earlier ones', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `activity-read-${process.pid}` })).id;
    await admin.devices.create(org, { hostname: 'before', public_key: key() });
    const read = await admin.tokens.create(org, { role: 'read', description: 'overview reader' });

    const { page, problems } = await browser.newPage();
    await signIn(page, url, read.token);
    await page.goto(`${url}/#/orgs/${org}`);
    await page.getByTestId('activity-history-note').waitFor();
    expect(await page.getByTestId('activity-history-note').textContent()).toBe('Changes since this page opened only: this credential may not read the audit log.');
    await page.getByTestId('activity-empty').waitFor();
    await admin.devices.create(org, { hostname: 'after', public_key: key() });
    await until(async () => (await rows(page)).length === 1, 'the live change');
    expect((await rows(page))[0]).toMatch(/^\d+ created device after$/);
    expect(await seriousViolations(page)).toEqual([]);

    // The events view says the same, once a change asks for its author.
    await page.goto(`${url}/#/orgs/${org}/events`);
    await page.locator('h1').first().waitFor();
    await admin.devices.create(org, { hostname: 'later', public_key: key() });
    await page.getByTestId('events-audit-note').waitFor();
    expect(await page.getByTestId('events-audit-note').textContent()).toBe('this credential may not read the audit log: who made each change is not shown');
    expect(problems).toEqual([]);
  }, 120_000);
});
