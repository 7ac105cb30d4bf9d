/**
 * The dashboard in a real browser (Debian's Chromium, driven by
 * playwright-core) against a real server process and three real `fleetplane
 * agent` processes in render mode: sign in, create a security group and watch
 * every agent converge, an apply error on a device, force-sync, no serious
 * accessibility violation in light and dark, and a revoked token ending the
 * session. Screenshots of the main views are saved (see support/browser.ts).
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { WIREGUARD_CONF_FILE } from '../../src/agent/dataplane/index.js';
import { FleetplaneClient } from '../../src/client/index.js';
import { tempDir, until } from '../agent/support/harness.js';
import { ensureBuilt, spawnFleetplane, waitForOutput, type Proc } from '../agent/support/processes.js';
import { ensureDashboardBuilt, hasChromium, launchBrowser, screenshot, seriousViolations, type TestBrowser } from './support/browser.js';

const ADMIN = 'fpa_dashboard_e2e_admin_token';
const AGENTS = 3;

/** Waits until the element's text satisfies `ok`; returns it. */
async function textUntil(page: Page, testId: string, ok: (text: string) => boolean, what: string, timeoutMs = 30_000): Promise<string> {
  return until(async () => {
    const t = await page.getByTestId(testId).first().textContent({ timeout: 1_000 }).catch(() => null);
    return t !== null && ok(t.trim()) ? t.trim() : undefined;
  }, what, timeoutMs);
}

describe.runIf(hasChromium())('the dashboard, in Chromium, with a real server and agents', () => {
  let server: Proc;
  let url = '';
  let admin: FleetplaneClient;
  let work: { path: string; remove: () => Promise<void> };
  let browser: TestBrowser;
  let org = '';
  const agents: { proc: Proc; dir: string; id: string }[] = [];

  beforeAll(async () => {
    ensureBuilt();
    ensureDashboardBuilt();
    work = await tempDir('fp-dashboard-');
    server = spawnFleetplane('serve', ['--memory', '--host', '127.0.0.1', '--port', '0', '--admin-token', ADMIN, '--log-level', 'warn', '--bookmark-interval', '2', '--revocation-check-interval', '0.5']);
    [, url = ''] = await waitForOutput(server, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 90_000);
    admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    org = (await admin.organizations.create({ name: 'dashboard-e2e' })).id;
    const key = await admin.registrationKeys.create(org, { description: 'e2e', single_use: false });
    for (let i = 0; i < AGENTS; i++) {
      const dir = join(work.path, `agent-${i}`);
      const proc = spawnFleetplane(
        'agent',
        ['--server', url, '--org', org, '--state-dir', dir, '--hostname', `node-${i}`, '--endpoint', `192.0.2.${i + 1}:51820`, '--log-level', 'warn'],
        { nodeFlags: ['--max-old-space-size=64'], logFile: join(work.path, `agent-${i}.log`), env: { FLEETPLANE_AGENT_REGISTRATION_KEY: key.key } },
      );
      agents.push({ proc, dir, id: '' });
    }
    const devices = await until(async () => {
      const c = await admin.convergence(org);
      return c.at_head === AGENTS ? (await admin.devices.list(org)).items : undefined;
    }, 'every agent enrolled and at the head', 60_000);
    for (const a of agents) a.id = devices.find((d) => d.hostname === `node-${agents.indexOf(a)}`)?.id ?? '';
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all(agents.map((a) => a.proc.stop(5_000)));
    await server?.stop(10_000);
    await work?.remove();
  }, 60_000);

  it('signs in, converges a new security group on every agent, shows an apply error, force-syncs, and passes axe in light and dark', async () => {
    const { page, problems } = await browser.newPage();
    await page.goto(url);
    await screenshot(page, 'login');
    // A wrong token is refused at the field; the right one signs in.
    await page.getByTestId('login-token').fill('fpa_not_a_token');
    await page.getByTestId('login-submit').click();
    await page.getByTestId('login-error').waitFor();
    await page.getByTestId('login-token').fill(ADMIN);
    await page.getByTestId('login-submit').click();
    await page.getByTestId('orgs-row').first().waitFor();
    // The token never reaches a place page scripts can read.
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toContain(ADMIN);

    await page.goto(`${url}/#/orgs/${org}`);
    const head = Number(await textUntil(page, 'fleet-head-revision', (t) => t !== '', 'the head revision'));
    await textUntil(page, 'fleet-at-head', (t) => t === String(AGENTS), 'every agent at the head');

    // A security group made in the browser reaches every agent, and the fleet view shows them converge.
    await page.getByRole('link', { name: 'Security groups', exact: true }).click();
    await page.getByTestId('sg-create').click();
    await page.getByTestId('sg-name').fill('web');
    await page.getByTestId('sg-description').fill('web tier');
    await page.getByTestId('sg-add-inbound_rules').click();
    await page.getByTestId('sg-inbound_rules-0-from').fill('70000');
    await page.getByTestId('sg-save').click();
    // The server's validation error shows at the field it names.
    await page.locator('[data-testid="sg-field-error"][data-path="/inbound_rules/0/from_port"]').waitFor();
    await page.getByTestId('sg-inbound_rules-0-from').fill('443');
    await page.getByTestId('sg-inbound_rules-0-to').fill('443');
    await page.getByTestId('sg-inbound_rules-0-ranges').fill('10.0.0.0/8, tag:lb');
    await page.getByTestId('sg-save').click();
    await page.getByTestId('sg-row').first().waitFor();
    await screenshot(page, 'security-groups');
    const group = (await admin.securityGroups.list(org)).items[0];
    expect(group?.name).toBe('web');
    // One field takes addresses and device references; they are stored apart.
    expect(group?.inbound_rules).toEqual([{ ip_protocol: 'tcp', from_port: 443, to_port: 443, ip_ranges: ['10.0.0.0/8'], devices: ['tag:lb'] }]);
    for (const a of agents) await admin.devices.update(org, a.id, { security_group_id: group?.id ?? null });
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    const after = Number(await textUntil(page, 'fleet-head-revision', (t) => Number(t) >= head + 1 + AGENTS, 'the head past the changes'));
    await until(async () => (await page.getByTestId('fleet-progress').getAttribute('data-value')) === String(AGENTS) && Number(await page.getByTestId('fleet-head-revision').textContent()) === after, 'the bar full at the new head');
    await textUntil(page, 'fleet-last-convergence', (t) => t.includes('converged in'), 'the time the last change took');
    await screenshot(page, 'fleet-overview');

    // An agent that can't apply: its WireGuard file's place is taken by a directory.
    const broken = agents[0]!;
    const conf = join(broken.dir, WIREGUARD_CONF_FILE);
    await rm(conf, { force: true });
    await mkdir(conf);
    await admin.organizations.update(org, { network: { mtu: 1380 } });
    await textUntil(page, 'fleet-error', (t) => t === '1', 'the apply error counted in the fleet view');
    await page.goto(`${url}/#/orgs/${org}/devices/${broken.id}`);
    const applyError = await textUntil(page, 'device-apply-error', (t) => t !== 'none' && t !== '', 'the apply error on the device page');
    expect(applyError.length).toBeGreaterThan(0);
    await screenshot(page, 'device');
    await rm(conf, { recursive: true, force: true });

    // Force-sync a healthy device from its page: the agent's answer is shown.
    await page.goto(`${url}/#/orgs/${org}/devices/${agents[1]!.id}`);
    await page.getByTestId('device-force-sync').click();
    const result = page.getByTestId('device-rpc-result');
    await until(async () => (await result.getAttribute('data-ok')) === 'true', 'the force-sync answer');
    expect(await result.getAttribute('data-method')).toBe('force-sync');

    // Its peers and rules, as the agent itself describes them: peers by hostname and the group's rule in words, the raw answer folded.
    await page.getByTestId('device-status-rpc').click();
    const dataplane = page.getByTestId('device-dataplane');
    await dataplane.waitFor();
    await until(async () => (await page.getByTestId('device-dataplane-peer').count()) === AGENTS - 1, 'a WireGuard peer per other device');
    const peerNames = await page.getByTestId('device-dataplane-peer').locator('td:first-child').allInnerTexts();
    expect(peerNames.sort()).toEqual(agents.map((_, i) => `node-${i}`).filter((h) => h !== 'node-1').sort());
    expect(await page.getByTestId('device-dataplane-inbound').innerText()).toContain('443');
    expect(await page.locator('[data-testid="device-rpc-result"] pre').count()).toBe(0);
    expect(await dataplane.locator('details pre').isVisible()).toBe(false);

    // The devices table, with search.
    await page.getByRole('link', { name: 'Devices', exact: true }).click();
    await until(async () => (await page.getByTestId('devices-row').count()) === AGENTS, 'a row per device');
    await page.getByTestId('devices-search').fill('node-2');
    await until(async () => (await page.getByTestId('devices-row').count()) === 1, 'the search narrowing the table');
    await page.getByTestId('devices-search').fill('');
    await screenshot(page, 'devices');
    await page.getByRole('link', { name: 'Credentials', exact: true }).click();
    await page.getByTestId('key-row').first().waitFor();
    await screenshot(page, 'credentials');
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    await admin.securityGroups.update(org, group?.id ?? '', { description: 'web servers' });
    await page.getByTestId('events-row').first().waitFor();
    await textUntil(page, 'events-actor', (t) => t.startsWith('admin'), 'who made the change, from the audit log');
    await screenshot(page, 'events');

    // No serious or critical accessibility violation on the main views, light and dark; every control reachable by keyboard.
    // Each view with the element that shows its data has arrived: the live
    // streams keep the network busy, so "network idle" never comes.
    const views: [string, string][] = [
      ['', '[data-testid="fleet-at-head"]'],
      ['/devices', '[data-testid="devices-row"]'],
      [`/devices/${agents[1]!.id}`, '[data-testid="device-online"]'],
      ['/security-groups', '[data-testid="sg-row"]'],
      ['/credentials', '[data-testid="key-row"]'],
      ['/events', 'main [role="status"], [data-testid="events-row"]'],
      ['/settings', '#settings-mtu'],
    ];
    for (const scheme of ['light', 'dark'] as const) {
      const { page: p } = await browser.newPage({ colorScheme: scheme });
      await p.goto(url);
      await p.getByTestId('login-token').fill(ADMIN);
      expect(await seriousViolations(p)).toEqual([]);
      await p.getByTestId('login-submit').click();
      for (const [v, loaded] of views) {
        await p.goto(`${url}/#/orgs/${org}${v}`);
        await p.locator('h1').first().waitFor();
        await p.locator(loaded).first().waitFor();
        expect(await seriousViolations(p), `${scheme} ${v || '/'}`).toEqual([]);
        if (scheme === 'dark' && v === '') await screenshot(p, 'fleet-overview-dark');
      }
      await p.keyboard.press('Tab');
      expect(await p.evaluate(() => document.activeElement?.tagName)).toMatch(/^(A|BUTTON|INPUT|SELECT|SUMMARY)$/);
      await p.context().close();
    }
    expect(problems).toEqual([]);
  }, 240_000);

  it('ends the session in the page when its token is revoked', async () => {
    const created = await admin.tokens.create(org, { role: 'read', description: 'revoked in the e2e' });
    const { page } = await browser.newPage();
    await page.goto(url);
    await page.getByTestId('login-token').fill(created.token);
    await page.getByTestId('login-submit').click();
    await page.goto(`${url}/#/orgs/${org}/devices`);
    await until(async () => (await page.getByTestId('devices-row').count()) === AGENTS, 'the read token sees the devices');
    await admin.tokens.delete(org, created.id);
    await page.getByTestId('session-ended').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('login-token').isVisible()).toBe(true);
    await page.context().close();
  }, 60_000);

  // Last: it stops the server.
  it('says so when the server is unreachable, keeping what it showed', async () => {
    const { page } = await browser.newPage();
    await page.goto(url);
    await page.getByTestId('login-token').fill(ADMIN);
    await page.getByTestId('login-submit').click();
    await page.goto(`${url}/#/orgs/${org}`);
    await textUntil(page, 'fleet-at-head', (t) => t !== '', 'the overview');
    await server.stop(10_000);
    await page.getByTestId('server-unreachable').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('fleet-at-head').isVisible()).toBe(true);
    await screenshot(page, 'server-unreachable');
    await page.context().close();
  }, 60_000);
});
