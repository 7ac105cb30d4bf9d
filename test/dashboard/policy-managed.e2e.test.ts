/**
 * The dashboard while a policy document manages an organization
 * (docs/protocol.md "Policy document"), in Chromium against an in-process
 * server: the document is applied and released through the real API while
 * the page is open, and the page follows. Managed, the security groups page
 * lists the document's groups read-only with the reason, the settings owned
 * by the document are read-only, and a device's group resolves to the
 * document's group; released, the groups are objects and editable again.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { FleetplaneClient } from '../../src/client/index.js';
import { ROUTES } from '../../src/protocol/index.js';
import { policyDocument, POLICY_GROUPS } from '../../src/bench/measure/policy-document.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, screenshot, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_policy_admin_token';
const key = (): string => randomBytes(32).toString('base64');

const POLICY = `# the e2e's: db from the objects, web new
network:
  mtu: 1380
security_groups:
  db:
    description: databases, by the document
    applies_to: [tag:db]
    inbound:
      - proto: tcp
        ports: 5432
        from: [tag:web]
  web:
    description: web tier
    applies_to: [tag:web]
`;

/** The texts of the cells `testId` names in the security group rows, in order. */
async function column(page: Page, testId: string): Promise<string[]> {
  return (await page.getByTestId('sg-row').getByTestId(testId).allTextContents()).map((t) => t.trim());
}

/** The server's count of events it sent packed as gzip events. */
async function gzipWritten(url: string): Promise<number> {
  return metricValue(url, 'fleetplane_watch_gzip_written_total');
}

/** A metric without labels, as the server's /metrics says it now. */
async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}${ROUTES.metrics}`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

async function tableSource(page: Page): Promise<string | null> {
  return page.getByTestId('sg-table').getAttribute('data-source', { timeout: 1_000 }).catch(() => null);
}

describe.runIf(hasChromium())('the dashboard with a policy document, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('shows the document’s groups and settings read-only with the reason, and editable again once released', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `policy-${process.pid}` })).id;
    const db = await admin.securityGroups.create(org, {
      name: 'db',
      description: 'databases',
      applies_to: ['tag:db'],
      inbound_rules: [{ ip_protocol: 'tcp', from_port: 5432, to_port: 5432, ip_ranges: [], devices: ['tag:web'] }],
      outbound_rules: [],
    });
    // One device in the group by id, one by tag: both must resolve to the document's groups too.
    const pinned = await admin.devices.create(org, { hostname: 'db-1', public_key: key(), security_group_id: db.id });
    const tagged = await admin.devices.create(org, { hostname: 'web-1', public_key: key(), tags: ['tag:web'] });

    const { page, problems } = await browser.newPage();
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}/security-groups`);
    // The objects, with what they apply to, editable.
    await page.getByTestId('sg-edit').first().waitFor();
    expect(await tableSource(page)).toBe('objects');
    expect(await column(page, 'sg-row-applies-to')).toEqual(['tag:db']);
    expect(await page.getByTestId('policy-notice').count()).toBe(0);

    // Applied while the page is open: the page follows the organization's watch stream.
    expect(await admin.policy.apply(org, POLICY)).toMatchObject({ managed: true, applied: true });
    await until(async () => (await tableSource(page)) === 'policy', 'the document’s groups in the page');
    const notice = page.getByTestId('policy-notice');
    expect(await notice.textContent()).toMatch(/managed by this organization's policy document.*fleetplane ctl policy apply -f policy\.yaml.*fleetplane ctl policy release/);
    expect(await column(page, 'sg-row-name')).toEqual(['db', 'web']);
    expect(await column(page, 'sg-row-description')).toEqual(['databases, by the document', 'web tier']);
    expect(await column(page, 'sg-row-applies-to')).toEqual(['tag:db', 'tag:web']);
    expect(await column(page, 'sg-row-inbound')).toEqual(['tcp port 5432 from tag:web', 'none']);
    // Read-only: no control to create, edit or delete a group.
    expect(await page.locator('main').getByRole('button').count()).toBe(0);
    expect(await page.locator('main input, main select, main textarea').count()).toBe(0);
    await screenshot(page, 'security-groups-policy');
    expect(await seriousViolations(page)).toEqual([]);

    // The settings the document owns are read-only with the same reason; the tunnel pool is not the document's.
    await page.goto(`${url}/#/orgs/${org}/settings`);
    await page.getByTestId('policy-notice').waitFor();
    await until(async () => (await page.locator('#settings-mtu').inputValue()) === '1380', 'the document’s MTU');
    for (const field of ['#settings-mtu', '#settings-resolvers', '#settings-auto']) expect(await page.locator(field).isEditable(), field).toBe(false);
    expect(await page.locator('#settings-cidr').isEditable()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);

    // Devices resolve the document's groups: by the id the group kept, and by tag.
    await page.goto(`${url}/#/orgs/${org}/devices/${pinned.id}`);
    const group = page.getByTestId('device-group');
    await until(async () => (await group.getAttribute('data-source', { timeout: 1_000 }).catch(() => null)) === 'policy', 'the device’s group from the document');
    expect(await group.getAttribute('data-group-id')).toBe(db.id);
    expect((await group.textContent())?.startsWith('db')).toBe(true);
    await page.goto(`${url}/#/orgs/${org}/devices/${tagged.id}`);
    await until(async () => (await group.textContent({ timeout: 1_000 }).catch(() => ''))?.startsWith('web (by its tag tag:web)') === true, 'the tagged device in the document’s web group');

    // Released while the page is open: the groups are objects again, editable.
    await page.goto(`${url}/#/orgs/${org}/security-groups`);
    await until(async () => (await tableSource(page)) === 'policy', 'the managed page');
    expect(await admin.policy.release(org)).toMatchObject({ managed: false });
    await until(async () => (await tableSource(page)) === 'objects' && (await page.getByTestId('sg-edit').count()) === 2, 'the objects, editable, in the page');
    expect(await page.getByTestId('policy-notice').count()).toBe(0);
    expect(await column(page, 'sg-row-name')).toEqual(['db', 'web']);
    await page.getByTestId('sg-edit').first().click();
    expect(await page.getByTestId('sg-applies-to').inputValue()).toBe('tag:db');
    await page.getByTestId('sg-description').fill('databases, by hand again');
    await page.getByTestId('sg-save').click();
    await until(async () => (await column(page, 'sg-row-description'))[0] === 'databases, by hand again', 'the edit saved');
    expect((await admin.securityGroups.get(org, db.id)).description).toBe('databases, by hand again');
    await page.goto(`${url}/#/orgs/${org}/settings`);
    await page.locator('#settings-mtu').waitFor();
    expect(await page.locator('#settings-mtu').isEditable()).toBe(true);
    expect(await page.getByTestId('policy-notice').count()).toBe(0);
    expect(problems).toEqual([]);
  }, 120_000);

  it('follows a document whose event comes packed as gzip, unpacked in the page', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `policy-gzip-${process.pid}` })).id;
    const { page, problems } = await browser.newPage();
    // Every page stream opened (the page's shared worker opens them): a line it could not unpack would make it open another and list again.
    const watches = (): Promise<number> => metricValue(url, 'fleetplane_page_streams_opened_total');
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}/security-groups`);
    // A group created while the page is open shows in it: its watch stream is live, so the document comes as an event, not in a list.
    await page.getByTestId('sg-create').waitFor();
    await admin.securityGroups.create(org, { name: 'old', description: '', inbound_rules: [], outbound_rules: [] });
    await until(async () => (await column(page, 'sg-row-name')).includes('old'), 'the new group in the page');
    const before = await gzipWritten(url);
    const watchesBefore = await watches();

    // The bench's document: its organization line is tens of KiB, so a watch that takes gzip gets it packed.
    expect(await admin.policy.apply(org, policyDocument(0))).toMatchObject({ managed: true, applied: true });
    await until(async () => (await tableSource(page)) === 'policy' && (await page.getByTestId('sg-row').count()) === POLICY_GROUPS, 'the document’s groups in the page');
    expect(await gzipWritten(url)).toBeGreaterThan(before);
    // Taken from the live stream, unpacked: no new watch, so no list brought it.
    await new Promise((r) => setTimeout(r, 500));
    expect(await watches()).toBe(watchesBefore);
    expect(watchesBefore).toBeGreaterThan(0);
    const names = await column(page, 'sg-row-name');
    expect([names[0], names.at(-1)]).toEqual(['g000', `g0${POLICY_GROUPS - 1}`]);
    expect(problems).toEqual([]);
  }, 120_000);
});
