/**
 * `fleetplane ctl devices get` shows the path to each peer a device reported
 * (docs/protocol.md "Path reports") as a PEERS table, peers named by the
 * organization's devices; `-o json` is the whole device. In process, against
 * a real server, with ctl's clock fixed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient, type Device, type EnrolledDevice, type PeerPath } from '../../src/client/index.js';
import { runCtl } from '../../src/cli/ctl/index.js';
import { ago, freshConfigPath, NOW, TextBuffer } from '../client/support/ctl-runner.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, wgKey, type RealServer } from './support/real-server.js';

let rs: RealServer;

beforeAll(async () => {
  rs = await startRealServer();
});
afterAll(async () => {
  await rs?.close();
});

async function ctl(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new TextBuffer();
  const stderr = new TextBuffer();
  const env = { FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: ADMIN_TOKEN, FLEETPLANE_CONFIG: freshConfigPath() };
  const code = await runCtl(argv, { stdout, stderr, env, now: () => NOW });
  return { code, out: stdout.text, err: stderr.text };
}

const path = (fields: Partial<PeerPath> & Pick<PeerPath, 'public_key'>): PeerPath => ({
  device_id: null,
  path: 'direct',
  via: null,
  relay_id: null,
  endpoint: null,
  latest_handshake: null,
  rx_bytes: 0,
  tx_bytes: 0,
  ...fields,
});

describe('ctl devices get: the PEERS table', () => {
  it('names each peer by device id or public key, says how it is reached, and prints the whole device with -o json', async () => {
    const name = uniqueName('ctl-peers');
    const org = (await rs.admin.organizations.create({ name })).id;
    const other = (await rs.admin.organizations.create({ name: uniqueName('ctl-peers-other') })).id;
    const create = (o: string, hostname: string): Promise<EnrolledDevice> => rs.admin.devices.create(o, { hostname, public_key: wgKey() });
    const web = await create(org, 'web-1');
    const db = await create(org, 'db-1');
    const cache = await create(org, 'cache-1');
    const relay = await create(org, 'relay-1');
    // A device of another organization is no name here, whatever the agent reported.
    const stranger = await create(other, 'stranger');
    const peers: PeerPath[] = [
      path({ public_key: db.public_key, device_id: db.id, endpoint: '198.51.100.7:51820', latest_handshake: ago(12), rx_bytes: 1536, tx_bytes: 2 * 1024 * 1024 }),
      path({ public_key: cache.public_key, path: 'relay', via: 'server', relay_id: 'replica-1', latest_handshake: ago(125), tx_bytes: 512 }),
      path({ public_key: stranger.public_key, device_id: stranger.id, path: 'relay', via: `device:${relay.id}`, latest_handshake: ago(3 * 3600) }),
      path({ public_key: randomBytes(32).toString('base64'), path: 'none' }),
    ];
    const agent = new FleetplaneClient({ baseUrl: rs.url, token: web.device_token });
    await agent.devices.putStatus(org, web.id, { applied_revision: 1, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'test', peers });

    const shown = await ctl(['devices', 'get', 'web-1', '--org', name]);
    expect(shown).toMatchObject({ code: 0, err: '' });
    const [fields = '', table = ''] = shown.out.split('\npeers:\n');
    // The device field by field and its status as a YAML block, without the raw peers.
    expect(fields).toMatch(/^hostname: +web-1$/m);
    expect(fields).toMatch(/^status:\n(?: {2}.*\n)* {2}applied_revision: 1$/m);
    expect(fields).not.toMatch(/^ {2}peers/m);
    expect(fields).not.toContain('public_key":');
    const [header, ...rows] = table.trimEnd().split('\n');
    expect(header).toMatch(/^HOSTNAME\s+PATH\s+ENDPOINT\s+HANDSHAKE\s+RX\s+TX$/);
    expect(rows).toHaveLength(4);
    expect(rows[0]).toMatch(/^db-1\s+direct\s+198\.51\.100\.7:51820\s+12s ago\s+1\.5 KiB\s+2 MiB$/);
    expect(rows[1]).toMatch(/^cache-1\s+relay via server\s+-\s+2m ago\s+0 B\s+512 B$/);
    expect(rows[2]).toMatch(/^-\s+relay via relay-1\s+-\s+3h ago\s+0 B\s+0 B$/);
    expect(rows[3]).toMatch(/^-\s+none\s+-\s+never\s+0 B\s+0 B$/);

    const json = await ctl(['devices', 'get', web.id, '--org', org, '-o', 'json']);
    expect(json.code, json.err).toBe(0);
    expect((JSON.parse(json.out) as Device).status).toMatchObject({ peers, peers_truncated: false });

    // No peers: said in words.
    const quiet = await ctl(['devices', 'get', 'db-1', '--org', name]);
    expect(quiet.code, quiet.err).toBe(0);
    expect(quiet.out).toMatch(/\npeers: none reported\n$/);
  });
});
