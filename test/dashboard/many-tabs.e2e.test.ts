/**
 * Issue 37, "Any number of tabs": twelve tabs on views of one organization
 * in one Chromium. Each tab used to hold two long-lived streams over
 * HTTP/1.1 (Chromium allows 6 connections per origin), so with three open a
 * Save waited for a connection and a fourth tab never loaded. Now the tabs
 * share one page stream through the dashboard's SharedWorker: the test opens
 * twelve, checks that the server holds one stream for all of them, saves
 * from one, and sees the change in every other.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { FleetplaneClient } from '../../src/client/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';
import { saveGroupName } from './support/save-group-name.js';
import { metricSum } from '../server/support/server-metric.js';

const ADMIN = 'fpa_dashboard_many_tabs_admin_token';
const TABS = 12;

const key = (): string => randomBytes(32).toString('base64');

async function texts(page: Page, testId: string): Promise<string[]> {
  return page.getByTestId(testId).allInnerTexts();
}

describe.runIf(hasChromium())('twelve dashboard tabs in one Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('share one page stream; a Save from one answers, and every other tab shows the change', async () => {
    const { url, browser, server } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `tabs-${process.pid}` })).id;
    const group = await admin.securityGroups.create(org, { name: 'web', description: 'web servers', inbound_rules: [], outbound_rules: [] });
    const pinned = await admin.devices.create(org, { hostname: 'web-1', public_key: key(), security_group_id: group.id });
    await admin.devices.create(org, { hostname: 'web-2', public_key: key() });
    const streamsBefore = await metricSum(server, 'fleetplane_watchers');

    const { page: first, context, problems } = await browser.newPage();
    await signIn(first, url, ADMIN);

    // Every view that shows the group or the head, each in more than one tab.
    const base = `${url}/#/orgs/${org}`;
    const views: { at: string; shows: (p: Page, name: string, head: number) => Promise<boolean> }[] = [
      { at: `${base}/security-groups`, shows: async (p, name) => (await texts(p, 'sg-row-name')).includes(name) },
      { at: `${base}/events`, shows: async (p, name) => (await p.getByTestId('events-row').allInnerTexts()).some((t) => t.includes(name)) },
      { at: `${base}/devices/${pinned.id}`, shows: async (p, name) => (await texts(p, 'device-group')).some((t) => t.includes(name)) },
      { at: base, shows: async (p, _name, head) => (await texts(p, 'fleet-head-revision')).includes(String(head)) },
      { at: `${base}/devices`, shows: async (p, _name, head) => (await texts(p, 'devices-row')).some((t) => t.includes(`/ ${head}`)) },
    ];
    const tabs: { page: Page; view: (typeof views)[number] }[] = [];
    for (let i = 0; i < TABS; i++) {
      const view = views[i % views.length]!;
      const page = i === 0 ? first : await context.newPage();
      page.on('pageerror', (e) => problems.push(`tab ${i}: ${e.message}`));
      await page.goto(view.at);
      tabs.push({ page, view });
    }
    // Each tab has its view live before the change: the old name, or the head as it is.
    const headBefore = (await admin.organizations.convergence(org)).revision;
    for (const [i, t] of tabs.entries()) {
      await until(async () => t.view.at.endsWith('/events') || (await t.view.shows(t.page, 'web', headBefore)), `tab ${i} (${t.view.at}) shows the organization`);
    }

    // One stream for the twelve tabs: the worker's. Without it there would be 12 (or 24), and the browser's 6 connections would be gone.
    expect((await metricSum(server, 'fleetplane_watchers')) - streamsBefore).toBe(1);
    expect(await metricSum(server, 'fleetplane_page_streams')).toBe(1);

    // Save from the first tab: a rename.
    const saver = tabs[0]!.page;
    const saved = await saveGroupName(saver, org, group.id, 'frontend');
    expect(saved.status).toBe(200);
    process.stdout.write(`many tabs: the Save with ${TABS} tabs open was answered in ${saved.ms} ms\n`);

    const head = (await admin.organizations.convergence(org)).revision;
    expect(head).toBeGreaterThan(headBefore);
    for (const [i, t] of tabs.entries()) {
      await until(async () => t.view.shows(t.page, 'frontend', head), `tab ${i} (${t.view.at}) shows the change`);
    }
    expect(problems).toEqual([]);

    // Tabs that close leave the stream to those still open; the last one to close ends it.
    for (const t of tabs.slice(1)) await t.page.close();
    await saver.reload();
    await until(async () => (await texts(saver, 'sg-row-name')).includes('frontend'), 'the tab left open is live after a reload');
    await until(async () => (await metricSum(server, 'fleetplane_page_streams')) === 1, 'one stream for the one tab');
    await context.close();
    await until(async () => (await metricSum(server, 'fleetplane_page_streams')) === 0, 'no stream once every tab closed');
  }, 180_000);
});
