/**
 * Issue 37, "Tabs share", where the server speaks TLS: it speaks HTTP/2
 * too, so every tab's requests and streams share one connection. The test
 * takes the SharedWorker away, so that each of twelve tabs holds its own
 * page stream, as a browser without SharedWorker does: over HTTP/1.1 the
 * seventh would wait for one of Chromium's six connections per origin
 * forever. Over HTTP/2 every tab is live, a Save from one answers, and the
 * others show it.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { FleetplaneClient } from '../../src/client/index.js';
import { trustedFetch } from '../../src/agent/identity/trusted-fetch.js';
import { until } from '../agent/support/harness.js';
import { requireBinary, which } from '../support/binaries.js';
import { issueServerCert, makeTestCa, type ServerCert, type TestCa } from '../support/test-ca.js';
import { hasChromium, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';
import { saveGroupName } from './support/save-group-name.js';
import { metricSum } from '../server/support/server-metric.js';
import { scratchDir } from '../support/scratch-dir.js';

const ADMIN = 'fpa_dashboard_tabs_over_http2_admin_token';
const TABS = 12;

const runs = hasChromium() && requireBinary('openssl', which('openssl') !== undefined);

describe.runIf(runs)('twelve dashboard tabs, each with its own stream, over HTTP/2', () => {
  let ca: TestCa | undefined;
  let cert: ServerCert | undefined;
  const env = useDashboardServer(ADMIN, () => {
    ca = makeTestCa(scratchDir('fleetplane-tabs-h2'));
    cert = issueServerCert(ca, 'server');
    return cert;
  });

  async function groupNames(page: Page): Promise<string[]> {
    return page.getByTestId('sg-row-name').allInnerTexts();
  }

  it('every tab is live on one connection; a Save from one answers, and the others show it', async () => {
    const { url, browser, server } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN, fetch: trustedFetch(ca?.pem ?? '') });
    const org = (await admin.organizations.create({ name: `tabs-h2-${process.pid}` })).id;
    const group = await admin.securityGroups.create(org, { name: 'web', description: 'web servers', inbound_rules: [], outbound_rules: [] });

    const { page: first, context, problems } = await browser.newPage({ trustAnyCertificate: true });
    // As a browser without SharedWorker: each tab runs the page hub itself, and holds its own page stream.
    await context.addInitScript(() => Reflect.deleteProperty(globalThis, 'SharedWorker'));
    await signIn(first, url, ADMIN);
    const tabs: Page[] = [];
    for (let i = 0; i < TABS; i++) {
      const page = i === 0 ? first : await context.newPage();
      page.on('pageerror', (e) => problems.push(`tab ${i}: ${e.message}`));
      await page.goto(`${url}/#/orgs/${org}/security-groups`);
      tabs.push(page);
    }
    for (const [i, page] of tabs.entries()) await until(async () => (await groupNames(page)).includes('web'), `tab ${i} shows the group`);
    await until(async () => (await metricSum(server, 'fleetplane_page_streams')) === TABS, `${TABS} page streams, one per tab`);

    // One HTTP/2 connection for the twelve tabs, and everything they asked for went over it.
    expect(await metricSum(server, 'fleetplane_http2_sessions')).toBe(1);
    for (const page of tabs) {
      const protocols = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => (e as PerformanceResourceTiming).nextHopProtocol));
      expect(new Set(protocols.filter((p) => p !== ''))).toEqual(new Set(['h2']));
    }

    const saver = tabs[0]!;
    const saved = await saveGroupName(saver, org, group.id, 'frontend');
    expect(saved.status).toBe(200);
    process.stdout.write(`tabs over HTTP/2: the Save with ${TABS} tabs (${TABS} streams) open was answered ${saved.ms} ms after the click\n`);
    for (const [i, page] of tabs.entries()) await until(async () => (await groupNames(page)).includes('frontend'), `tab ${i} shows the change`);
    expect(problems).toEqual([]);

    await context.close();
    await until(async () => (await metricSum(server, 'fleetplane_page_streams')) === 0, 'no stream once every tab closed');
  }, 180_000);
});
