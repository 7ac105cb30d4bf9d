/**
 * Issue 37, "Security groups": the groups table previews each group's rules
 * and says how many devices it holds (bound as agents bind: by
 * security_group_id, else by tag); the editor shows no ports for icmp and
 * `any` and sends none for them (0/0), whether typed before or stored,
 * says an empty address field means anywhere, shows the server's errors in
 * words at their field (a taken name too) and confirms a save; the
 * overview lists the recent changes. Real server, real Chromium.
 */
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_security_groups_admin_token';
const key = (): string => randomBytes(32).toString('base64');

/** The trimmed text of the element `testId` names in the row of the group named `name`. */
async function cell(page: Page, name: string, testId: string): Promise<string> {
  const row = page.getByTestId('sg-row').filter({ has: page.getByTestId('sg-row-name').getByText(name, { exact: true }) });
  return ((await row.getByTestId(testId).textContent({ timeout: 2_000 })) ?? '').replace(/\s+/g, ' ').trim();
}

describe.runIf(hasChromium())('security groups in the dashboard, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  async function signedIn(url: string) {
    const { page, problems } = await env().browser.newPage();
    await signIn(page, url, ADMIN);
    return { page, problems };
  }

  it('previews each group’s rules and counts the devices bound to it by id and by tag, live', async () => {
    const { url } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `sg-preview-${process.pid}` })).id;
    const web = await admin.securityGroups.create(org, {
      name: 'web',
      description: 'web tier',
      applies_to: ['tag:web'],
      inbound_rules: [
        { ip_protocol: 'tcp', from_port: 443, to_port: 443, ip_ranges: [] },
        { ip_protocol: 'tcp', from_port: 5432, to_port: 5432, ip_ranges: [], devices: ['tag:web'] },
        { ip_protocol: 'udp', from_port: 60000, to_port: 61000, ip_ranges: ['10.0.0.0/8'] },
        { ip_protocol: 'icmp', from_port: 0, to_port: 0, ip_ranges: [] },
      ],
      outbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] }],
    });
    const db = await admin.securityGroups.create(org, { name: 'db', description: '', inbound_rules: [], outbound_rules: [] });
    await admin.devices.create(org, { hostname: 'by-id', public_key: key(), security_group_id: web.id });
    await admin.devices.create(org, { hostname: 'by-tag', public_key: key(), tags: ['tag:web'] });
    // Its own group wins over the tag: it is in db, not web.
    await admin.devices.create(org, { hostname: 'pinned', public_key: key(), tags: ['tag:web'], security_group_id: db.id });
    const loose = await admin.devices.create(org, { hostname: 'loose', public_key: key() });

    const { page, problems } = await signedIn(url);
    await page.goto(`${url}/#/orgs/${org}/security-groups`);
    await until(async () => (await cell(page, 'web', 'sg-row-used-by')) === 'used by 2 devices', 'web used by the device naming it and the device tagged for it');
    expect(await cell(page, 'db', 'sg-row-used-by')).toBe('used by 1 device');
    expect(await page.getByTestId('sg-count').textContent()).toBe('2 security groups');
    expect(await cell(page, 'web', 'sg-row-inbound')).toBe('tcp port 443 from anywhere; tcp port 5432 from tag:web; udp ports 60000-61000 from 10.0.0.0/8 +1 more');
    expect(await cell(page, 'web', 'sg-row-outbound')).toBe('any protocol to anywhere');
    expect(await cell(page, 'db', 'sg-row-inbound')).toBe('none');
    await page.getByTestId('sg-row-inbound-more').click();
    expect(await cell(page, 'web', 'sg-row-inbound')).toBe('tcp port 443 from anywhere; tcp port 5432 from tag:web; udp ports 60000-61000 from 10.0.0.0/8; icmp from anywhere fewer');
    expect(await seriousViolations(page)).toEqual([]);

    // A device tagged meanwhile joins the count without a reload.
    await admin.devices.update(org, loose.id, { tags: ['tag:web'] });
    await until(async () => (await cell(page, 'web', 'sg-row-used-by')) === 'used by 3 devices', 'the newly tagged device counted');
    expect(problems).toEqual([]);
  }, 120_000);

  it('edits icmp and any rules without ports, says empty is anywhere, shows errors in words at their field, and confirms saves', async () => {
    const { url } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `sg-editor-${process.pid}` })).id;
    await admin.securityGroups.create(org, { name: 'taken', description: '', inbound_rules: [], outbound_rules: [] });
    const { page, problems } = await signedIn(url);
    await page.goto(`${url}/#/orgs/${org}/security-groups`);
    await page.getByTestId('sg-row').first().waitFor();

    await page.getByTestId('sg-create').click();
    await page.getByTestId('sg-name').fill('ping');
    for (let i = 0; i < 3; i++) await page.getByTestId('sg-add-inbound_rules').click();
    // Ports typed for tcp, then the protocol changed to icmp or any: no port fields, and none sent (0/0, the wire's "no ports").
    await page.getByTestId('sg-inbound_rules-0-from').fill('80');
    await page.getByTestId('sg-inbound_rules-0-protocol').selectOption('icmp');
    await page.getByTestId('sg-inbound_rules-1-from').fill('8080');
    await page.getByTestId('sg-inbound_rules-1-to').fill('8090');
    await page.getByTestId('sg-inbound_rules-1-protocol').selectOption('any');
    for (const i of [0, 1]) {
      expect(await page.getByTestId(`sg-inbound_rules-${i}-from`).count()).toBe(0);
      expect(await page.getByTestId(`sg-inbound_rules-${i}-to`).count()).toBe(0);
      await page.getByTestId(`sg-inbound_rules-${i}-no-ports`).waitFor();
    }
    expect(await page.getByTestId('sg-inbound_rules-0-no-ports').textContent()).toBe('no ports (icmp)');
    expect(await page.getByTestId('sg-inbound_rules-2-from').count()).toBe(1);
    // An empty address field says it means anywhere, in its help and its placeholder.
    expect(await page.getByTestId('sg-inbound_rules-0-help').textContent()).toBe('Empty: from anywhere (every address).');
    expect(await page.getByTestId('sg-inbound_rules-0-ranges').getAttribute('placeholder')).toBe('anywhere');

    // A port out of range: the schema's `must be <= 65535` in words, at the port (the browser's own check doesn't block the save).
    await page.getByTestId('sg-inbound_rules-2-from').fill('70000');
    await page.getByTestId('sg-save').click();
    const portError = page.locator('[data-testid="sg-field-error"][data-path="/inbound_rules/2/from_port"]');
    expect(await portError.textContent()).toBe('must be a port from 0 to 65535 (0 and 0: all ports)');

    // A bad range: the server's complaint in words, at the rule's address field, naming the entry.
    await page.getByTestId('sg-inbound_rules-2-from').fill('22');
    await page.getByTestId('sg-inbound_rules-2-ranges').fill('10.0.0.0/33, tag:ops');
    await page.getByTestId('sg-save').click();
    const rangeError = page.locator('[data-testid="sg-field-error"][data-path="/inbound_rules/2/ip_ranges"]');
    await rangeError.waitFor();
    expect(await rangeError.textContent()).toBe('10.0.0.0/33: must be an IP range like 10.0.0.0/8, an address like 10.0.0.1, or 10.0.0.1-10.0.0.9');
    expect(await page.getByTestId('sg-saved').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    // "Make it anywhere" empties the field; then a good range, and the save is confirmed.
    await page.getByTestId('sg-inbound_rules-2-anywhere').click();
    expect(await page.getByTestId('sg-inbound_rules-2-ranges').inputValue()).toBe('');
    await page.getByTestId('sg-inbound_rules-2-ranges').fill('10.0.0.0/8, tag:ops');
    await page.getByTestId('sg-save').click();
    expect(await page.getByTestId('sg-saved').textContent()).toBe('Created ping');
    expect(await page.getByTestId('sg-saved').getAttribute('role')).toBe('status');
    const ping = (await admin.securityGroups.list(org)).items.find((g) => g.name === 'ping');
    expect(ping?.inbound_rules).toEqual([
      { ip_protocol: 'icmp', from_port: 0, to_port: 0, ip_ranges: [] },
      { ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] },
      { ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8'], devices: ['tag:ops'] },
    ]);

    // A taken name: the server's 409 in its words at the name field, not a banner.
    await page.getByTestId('sg-create').click();
    expect(await page.getByTestId('sg-saved').count()).toBe(0);
    await page.getByTestId('sg-name').fill('taken');
    await page.getByTestId('sg-save').click();
    const nameError = page.locator('[data-testid="sg-field-error"][data-path="/name"]');
    await nameError.waitFor();
    expect(await nameError.textContent()).toBe('another security group of this organization is named "taken"');
    expect(await page.locator('.banner.bad').count()).toBe(0);
    expect(await page.getByTestId('sg-name').getAttribute('aria-describedby')).toBe(await nameError.getAttribute('id'));
    await page.getByRole('button', { name: 'Cancel' }).click();

    // Editing keeps the portless rules portless and confirms the save.
    await page.locator(`[data-testid="sg-row"][data-sg-id="${ping?.id ?? ''}"]`).getByTestId('sg-edit').click();
    expect(await page.getByTestId('sg-inbound_rules-0-from').count()).toBe(0);
    expect(await page.getByTestId('sg-inbound_rules-2-from').inputValue()).toBe('22');
    await page.getByTestId('sg-description').fill('ping and ssh');
    await page.getByTestId('sg-save').click();
    expect(await page.getByTestId('sg-saved').textContent()).toBe('Saved ping');
    expect((await admin.securityGroups.get(org, ping?.id ?? '')).description).toBe('ping and ssh');
    expect(problems).toEqual([]);
  }, 120_000);

  it('saves an any rule stored with ports (made through the API) without them, as it shows it', async () => {
    const { url } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `sg-any-ports-${process.pid}` })).id;
    const group = await admin.securityGroups.create(org, {
      name: 'legacy',
      description: '',
      inbound_rules: [{ ip_protocol: 'any', from_port: 80, to_port: 90, ip_ranges: ['10.0.0.0/8'] }],
      outbound_rules: [{ ip_protocol: 'tcp', from_port: 443, to_port: 443, ip_ranges: [] }],
    });
    const { page, problems } = await signedIn(url);
    await page.goto(`${url}/#/orgs/${org}/security-groups`);
    await page.locator(`[data-testid="sg-row"][data-sg-id="${group.id}"]`).getByTestId('sg-edit').click();
    expect(await page.getByTestId('sg-inbound_rules-0-no-ports').textContent()).toBe('every port of every protocol');
    expect(await page.getByTestId('sg-inbound_rules-0-from').count()).toBe(0);
    // Its ports come back as typed while it is tcp again; set back to any, they are not sent.
    await page.getByTestId('sg-inbound_rules-0-protocol').selectOption('tcp');
    expect(await page.getByTestId('sg-inbound_rules-0-from').inputValue()).toBe('80');
    await page.getByTestId('sg-inbound_rules-0-protocol').selectOption('any');
    await page.getByTestId('sg-outbound_rules-0-protocol').selectOption('icmpv6');
    const sent = page.waitForRequest((r) => r.method() === 'PATCH');
    await page.getByTestId('sg-save').click();
    expect(await page.getByTestId('sg-saved').textContent()).toBe('Saved legacy');
    const body = (await sent).postDataJSON() as { inbound_rules: unknown; outbound_rules: unknown };
    const expected = {
      inbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: ['10.0.0.0/8'] }],
      outbound_rules: [{ ip_protocol: 'icmpv6', from_port: 0, to_port: 0, ip_ranges: [] }],
    };
    expect(body).toMatchObject(expected);
    expect(await admin.securityGroups.get(org, group.id)).toMatchObject(expected);
    expect(problems).toEqual([]);
  }, 120_000);

  it('lists a change in the overview’s recent activity, linking to the events and the audit log', async () => {
    const { url } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `sg-activity-${process.pid}` })).id;
    const { page, problems } = await signedIn(url);
    await page.goto(`${url}/#/orgs/${org}`);
    const rows = page.getByTestId('activity-row');
    // As it opens, the organization's creation, from the audit log.
    await until(async () => (await rows.count()) === 1, 'the creation in the overview');
    expect(await rows.nth(0).getAttribute('data-kind')).toBe('organization');
    const device = await admin.devices.create(org, { hostname: 'newcomer', public_key: key() });
    await admin.securityGroups.create(org, { name: 'fresh', description: '', inbound_rules: [], outbound_rules: [] });
    await until(async () => (await rows.count()) === 3, 'both changes in the overview');
    // Newest first.
    expect(await rows.nth(0).getAttribute('data-kind')).toBe('security-group');
    expect(await rows.nth(0).getByTestId('activity-name').textContent()).toBe('fresh');
    expect(await rows.nth(1).getAttribute('data-kind')).toBe('device');
    expect(await rows.nth(1).getAttribute('data-type')).toBe('created');
    expect(await rows.nth(1).textContent()).toMatch(/^createddevicenewcomer.*s ago$/);
    expect(await rows.nth(1).getByTestId('activity-name').getAttribute('href')).toBe(`#/orgs/${org}/devices/${device.id}`);
    expect(await page.getByTestId('activity-events-link').getAttribute('href')).toBe(`#/orgs/${org}/events`);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByTestId('activity-audit-link').click();
    await until(async () => page.url().endsWith(`/orgs/${org}/audit`), 'the audit view');
    expect(problems).toEqual([]);
  }, 120_000);
});
