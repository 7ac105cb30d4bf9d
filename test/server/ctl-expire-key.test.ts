/**
 * Issue 37, "Device actions": `fleetplane ctl devices expire <device>`
 * expires a device's key by its name, as Headscale's `nodes expire`: the
 * device's token stops working, the device stays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { startServer } from '../../src/server/index.js';
import { ctlAt } from '../client/support/ctl-runner.js';
import { Harness, uniqueName, wgKey } from './fixtures.js';

describe('ctl devices expire', () => {
  let h: Harness;
  let admin: FleetplaneClient;

  beforeAll(async () => {
    h = new Harness(await startServer({ logLevel: 'silent', memory: true, host: '127.0.0.1', port: 0 }, { listen: true }));
    admin = new FleetplaneClient({ baseUrl: h.server.url ?? '', token: h.admin });
  });
  afterAll(async () => {
    await h.server.close();
  });

  const ctl = (argv: string[], token = h.admin) => ctlAt(h.server.url ?? '', token, argv);

  it('expires the named device’s key: its token is refused, the device stays; a read token may not', async () => {
    const orgName = uniqueName('expire');
    const org = (await admin.organizations.create({ name: orgName })).id;
    const host = uniqueName('laptop');
    const device = await admin.devices.create(org, { hostname: host, public_key: wgKey() });
    const asDevice = new FleetplaneClient({ baseUrl: h.server.url ?? '', token: device.device_token });
    expect((await asDevice.devices.get(org, device.id)).hostname).toBe(host);

    const reader = (await admin.tokens.create(org, { role: 'read', description: 'r' })).token;
    const refused = await ctl(['devices', 'expire', host, '--org', orgName], reader);
    expect(refused.code).not.toBe(0);
    expect((await asDevice.devices.get(org, device.id)).hostname).toBe(host);

    const done = await ctl(['devices', 'expire', host, '--org', orgName]);
    expect(done).toMatchObject({ code: 0, err: '' });
    expect(done.out).toContain(`expired the key of device ${host} (${device.id})`);
    await expect(asDevice.devices.get(org, device.id)).rejects.toMatchObject({ status: 401 });
    expect((await admin.devices.get(org, device.id)).hostname).toBe(host);
  });
});
