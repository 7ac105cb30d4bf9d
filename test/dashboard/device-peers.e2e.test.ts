/**
 * The dashboard's device page shows the path to each peer the device
 * reported (docs/protocol.md "Path reports") as a table with the peers'
 * hostnames, in Chromium against an in-process server.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FleetplaneClient, type EnrolledDevice, type PeerPath } from '../../src/client/index.js';
import { until } from '../agent/support/harness.js';
import { hasChromium, screenshot, seriousViolations, signIn } from './support/browser.js';
import { useDashboardServer } from './support/dashboard-server.js';

const ADMIN = 'fpa_dashboard_peers_admin_token';
const key = (): string => randomBytes(32).toString('base64');

describe.runIf(hasChromium())('the device page’s peers, in Chromium', () => {
  const env = useDashboardServer(ADMIN);

  it('lists each peer with its hostname, path, endpoint and traffic', async () => {
    const { url, browser } = env();
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = (await admin.organizations.create({ name: `peers-${process.pid}` })).id;
    const create = (hostname: string): Promise<EnrolledDevice> => admin.devices.create(org, { hostname, public_key: key() });
    const [web, db, relay] = [await create('web-1'), await create('db-1'), await create('relay-1')];
    const base = { device_id: null, via: null, relay_id: null, endpoint: null, latest_handshake: null, rx_bytes: 0, tx_bytes: 0 };
    const peers: PeerPath[] = [
      { ...base, public_key: db.public_key, device_id: db.id, path: 'direct', endpoint: '198.51.100.7:51820', latest_handshake: new Date().toISOString(), rx_bytes: 1536 },
      { ...base, public_key: relay.public_key, path: 'relay', via: 'server', relay_id: 'replica-1' },
      { ...base, public_key: key(), path: 'relay', via: `device:${relay.id}` },
    ];
    await new FleetplaneClient({ baseUrl: url, token: web.device_token }).devices.putStatus(org, web.id, {
      applied_revision: 1,
      apply_error: null,
      local_endpoints: [],
      os: 'linux',
      agent_version: 'test',
      peers,
    });

    const { page, problems } = await browser.newPage();
    await signIn(page, url, ADMIN);
    await page.goto(`${url}/#/orgs/${org}/devices/${web.id}`);
    const rows = page.getByTestId('device-peer-row');
    await until(async () => (await rows.count()) === peers.length, 'a row per peer');
    const cells = await Promise.all([0, 1, 2].map(async (i) => (await rows.nth(i).locator('td').allTextContents()).map((t) => t.trim())));
    expect(cells[0]).toEqual(['db-1', 'direct', '198.51.100.7:51820', expect.stringMatching(/ago$/), '1.5 KiB', '0 B']);
    expect(cells[1]?.slice(0, 3)).toEqual(['relay-1', 'relay via server', '—']);
    expect(cells[2]?.slice(0, 4)).toEqual(['—', 'relay via relay-1', '—', 'never']);
    // A known peer links to its own page.
    expect(await rows.nth(0).getByRole('link', { name: 'db-1' }).getAttribute('href')).toContain(db.id);
    await page.getByTestId('device-peers').scrollIntoViewIfNeeded();
    await screenshot(page, 'device-peers');
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  }, 90_000);
});
