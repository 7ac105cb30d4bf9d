/**
 * Issue 37, "Device actions": on a device's page an operator renames it,
 * moves it to a security group, tags it, approves and revokes its routes,
 * and deletes it, each save confirming or showing the server's error at its
 * field; in the devices view, several devices at once. Real server, real
 * Chromium.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_device_actions_admin_token';
const key = (): string => randomBytes(32).toString('base64');

describe.runIf(hasChromium())('acting on devices in the dashboard, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  async function signedIn(url: string) {
    const { page, problems } = await env().browser.newPage();
    await signIn(page, url, ADMIN);
    return { page, problems };
  }

  it('renames, regroups, tags, approves and revokes routes, shows errors at their field, and deletes one device', async () => {
    const { url } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `actions-${process.pid}` })).id;
    const web = await admin.securityGroups.create(org, { name: 'web', description: '', inbound_rules: [], outbound_rules: [] });
    const device = await admin.devices.create(org, { hostname: 'edge-1', public_key: key(), advertise_cidrs: ['10.20.0.0/16'] });
    const asDevice = new FleetplaneClient({ baseUrl: url, token: device.device_token });
    const { page, problems } = await signedIn(url);
    await page.goto(`${url}/#/orgs/${org}/devices/${device.id}`);
    await page.getByTestId('device-hostname').waitFor();

    await page.getByTestId('device-hostname').fill('edge-renamed');
    await page.getByTestId('device-group-select').selectOption(web.id);
    await page.getByTestId('device-tags-input').fill('tag:edge, dmz');
    await page.getByTestId('device-save').click();
    await page.getByTestId('device-saved').getByText('Saved: name, security group, tags').waitFor();
    await until(async () => {
      const d = await admin.devices.get(org, device.id);
      return d.hostname === 'edge-renamed' && d.security_group_id === web.id && (d.tags ?? []).join(',') === 'tag:dmz,tag:edge';
    }, 'the device changed on the server');

    // A tag the server refuses: its words, at the tags field.
    await page.getByTestId('device-tags-input').fill('tag:Not Valid!');
    await page.getByTestId('device-save').click();
    await page.locator('[data-path="/tags"]').waitFor();
    expect(await page.getByTestId('device-saved').count()).toBe(0);

    // Routes: advertised and waiting, approved, revoked.
    const route = page.locator('[data-testid="device-route"][data-cidr="10.20.0.0/16"]');
    await route.getByTestId('device-route-approve').click();
    await until(async () => (await admin.devices.get(org, device.id)).approved_cidrs.includes('10.20.0.0/16'), 'the route approved');
    await route.getByTestId('device-route-revoke').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await route.getByTestId('device-route-revoke').click();
    await until(async () => (await admin.devices.get(org, device.id)).approved_cidrs.length === 0, 'the route revoked');

    // Expire the key: asked first, confirmed; the device's token stops working, the device stays.
    expect((await asDevice.devices.get(org, device.id)).id).toBe(device.id);
    await page.getByTestId('device-expire').click();
    await page.getByTestId('device-expire-confirm').click();
    await page.getByTestId('device-saved').getByText('must enroll again').waitFor();
    await expect(asDevice.devices.get(org, device.id)).rejects.toMatchObject({ status: 401 });
    expect((await admin.devices.get(org, device.id)).hostname).toBe('edge-renamed');

    // Delete asks first, then goes back to the list.
    await page.getByTestId('device-delete').click();
    await page.getByTestId('device-delete-confirm').click();
    await until(async () => page.url().endsWith(`/orgs/${org}/devices`), 'back to the devices');
    await expect(admin.devices.get(org, device.id)).rejects.toMatchObject({ status: 404 });
    expect(problems).toEqual([]);
  }, 120_000);

  it('sets the group of, tags and deletes several devices at once from the devices view', async () => {
    const { url } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `bulk-${process.pid}` })).id;
    const db = await admin.securityGroups.create(org, { name: 'db', description: '', inbound_rules: [], outbound_rules: [] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await admin.devices.create(org, { hostname: `node-${i}`, public_key: key() })).id);
    const { page, problems } = await signedIn(url);
    await page.goto(`${url}/#/orgs/${org}/devices`);
    await page.getByTestId('devices-row').nth(4).waitFor();

    // Two by hand.
    await page.getByLabel('Select node-1').check();
    await page.getByLabel('Select node-3').check();
    await page.getByTestId('bulk-count').getByText('2 selected').waitFor();
    await page.getByTestId('bulk-group').selectOption(db.id);
    await page.getByTestId('bulk-group-apply').click();
    await page.locator('[data-testid="bulk-progress"][data-finished="true"]').waitFor();
    const grouped = async (): Promise<string[]> => (await Promise.all(ids.map((id) => admin.devices.get(org, id)))).filter((d) => d.security_group_id === db.id).map((d) => d.hostname).sort();
    expect(await grouped()).toEqual(['node-1', 'node-3']);

    // Every device shown: a tag, then delete.
    await page.getByTestId('devices-select-all').check();
    await page.getByTestId('bulk-count').getByText('5 selected').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByTestId('bulk-tag').fill('fleet');
    await page.getByTestId('bulk-tag-add').click();
    await until(async () => (await Promise.all(ids.map((id) => admin.devices.get(org, id)))).every((d) => (d.tags ?? []).includes('tag:fleet')), 'every device tagged');
    await page.getByTestId('devices-select-all').check();
    await page.getByTestId('bulk-delete').click();
    await page.getByTestId('bulk-delete-confirm').click();
    await until(async () => (await admin.devices.list(org)).items.length === 0, 'every device deleted');
    await until(async () => (await page.getByTestId('devices-row').count()) === 0, 'the view follows');
    expect(problems).toEqual([]);
  }, 120_000);
});
