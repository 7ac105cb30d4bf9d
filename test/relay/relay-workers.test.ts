/**
 * The relay under `serve --workers 2` without Redis (docs/protocol.md
 * "Relays"): each worker is a replica of its own, and the primary keeps the
 * directory of their relay sessions. The primary hands new connections to
 * the workers in turn, so devices connecting one after the other land on
 * both; each pair still reaches each other, through the workers' link.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/postgres-server.js';
import { scrape } from '../scaleout/support/metrics.js';
import { ADMIN_TOKEN, ensureBuilt, killAllProcesses, printOutputOnFailure, spawnServe, type ServerProcess } from '../scaleout/support/replica-process.js';
import { listReplicaRows } from '../scaleout/support/rest.js';
import { eventually, Fleet } from '../gateway/support.js';
import { enrollKeyed, packet, RelayPeer, type KeyedDevice } from './support.js';

const PG = inject('pgAdminUrl');

printOutputOnFailure();

describe.runIf(PG !== '')('the relay under --workers 2 (no Redis)', () => {
  let primary: ServerProcess | undefined;
  const peers: RelayPeer[] = [];

  beforeAll(async () => {
    ensureBuilt();
    const databaseUrl = await createDatabase(PG, 'relayworkers');
    const p = spawnServe('relay-workers', ['--workers', '2', '--database-url', databaseUrl, '--port', '0', '--host', '127.0.0.1', '--admin-token', ADMIN_TOKEN, '--log-level', 'warn']);
    const [, url] = await p.waitForOutput(/fleetplane is listening on (http:\/\/\S+?) \(2 workers\)/);
    p.url = url ?? '';
    primary = p;
  });

  afterAll(async () => {
    for (const p of peers) p.close();
    await killAllProcesses();
  });

  it('devices on different workers reach each other', async () => {
    const p = primary;
    if (!p) throw new Error('not started');
    await eventually('both workers are registered replicas', async () => (await listReplicaRows(p.url)).length === 2);
    const fleet = await Fleet.create(p.url, ADMIN_TOKEN);
    const devices: KeyedDevice[] = [];
    for (let i = 0; i < 6; i++) devices.push(await enrollKeyed(p.url, fleet.org, fleet.registrationKey));
    // One after the other: consecutive connections go to the two workers in turn.
    for (const d of devices) peers.push(await RelayPeer.connect(p.url, d.token));
    for (let i = 0; i < devices.length; i += 2) {
      const [x, y] = [devices[i], devices[i + 1]];
      const [px, py] = [peers[i], peers[i + 1]];
      if (!x || !y || !px || !py) throw new Error('missing pair');
      await px.sendUntilReceived(py, x.key, y.key, packet(`w${i}`));
      await py.sendUntilReceived(px, y.key, x.key, packet(`w${i + 1}`));
    }
    const metrics = await scrape(p.url);
    expect(metrics.value('fleetplane_relay_sessions', {}), 'sessions on both workers together').toBe(6);
    expect(metrics.value('fleetplane_relay_packets_total', { result: 'forwarded' }), 'packets forwarded from one worker to the other').toBeGreaterThan(0);
  }, 60_000);
});
