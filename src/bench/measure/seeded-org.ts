import { createDevices, type BenchDevice, type FleetApi } from '../http-api.js';
import { log } from '../log.js';
import { FleetServer } from '../server/fleet-server.js';

/** A default server with one organization of D devices. */
export interface SeededOrg {
  server: FleetServer;
  api: FleetApi;
  org: string;
  devices: BenchDevice[];
  seedSeconds: number;
}

/**
 * Creating D devices is slow on PGlite (the tunnel-IP search costs time in
 * proportion to the devices already there: ~1 min for 1,000), so scenarios
 * of one `npm run bench` that need the same D share one seeded server. Each
 * scenario uses its own watchers; the changes it makes only bump revisions.
 */
const cache = new Map<number, Promise<SeededOrg>>();

export async function seededOrg(devices: number): Promise<SeededOrg> {
  const cached = cache.get(devices);
  if (cached) {
    const s = await cached.catch(() => undefined);
    if (s && s.server.child.exitCode === null && s.server.child.signalCode === null) return s;
    cache.delete(devices);
  }
  const p = seed(devices);
  cache.set(devices, p);
  p.catch(() => cache.delete(devices));
  return p;
}

async function seed(count: number): Promise<SeededOrg> {
  const server = await FleetServer.start();
  const api = server.api();
  const started = performance.now();
  log.info({ devices: count }, 'seeding an organization (shared by the scenarios that need it)');
  const org = await api.createOrganization(`seeded-${count}-${process.pid}`);
  const devices = await createDevices(api, org, count);
  const seedSeconds = (performance.now() - started) / 1000;
  log.info({ devices: count, seconds: Math.round(seedSeconds) }, 'seeded');
  return { server, api, org, devices, seedSeconds };
}

/** Stops every seeded server (end of the bench). */
export async function stopSeeded(): Promise<void> {
  for (const p of cache.values()) {
    const s = await p.catch(() => undefined);
    if (!s) continue;
    s.api.close();
    await s.server.stop();
  }
  cache.clear();
}
