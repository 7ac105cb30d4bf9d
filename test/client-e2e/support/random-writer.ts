/** Concurrent random writers against a real server: devices, security groups, the organization. */
import { ConflictError, NotFoundError, ValidationError, type FleetplaneClient } from '../../../src/client/index.js';
import { uniqueName, wgKey } from './real-server.js';

/**
 * Losing a race against another writer is a real answer, not a failure: the
 * object was deleted meanwhile (404), the group is still used by a device
 * (409 conflict), or the group a new device names was just deleted (400 on
 * `/security_group_id`).
 */
function raced(err: unknown): boolean {
  if (err instanceof NotFoundError) return true;
  if (err instanceof ConflictError) return err.code === 'conflict';
  return err instanceof ValidationError && err.details?.['path'] === '/security_group_id';
}

export interface WriterOptions {
  ops: number;
  random: () => number;
  /** Awaited between writes (tests cut connections or compact from here). */
  between?: () => void | Promise<void>;
}

/** Performs `ops` random writes; resolves to how many the server applied. */
export async function randomWrites(admin: FleetplaneClient, org: string, opts: WriterOptions): Promise<number> {
  const { random } = opts;
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
  let applied = 0;
  for (let n = 0; n < opts.ops; n++) {
    await opts.between?.();
    const r = random();
    try {
      if (r < 0.3) {
        const group = random() < 0.3 ? pick((await admin.securityGroups.list(org)).items) : undefined;
        await admin.devices.create(org, { hostname: uniqueName('dev'), public_key: wgKey(), security_group_id: group?.id ?? null });
      } else if (r < 0.5) {
        const d = pick((await admin.devices.list(org)).items);
        if (d) await admin.devices.update(org, d.id, { hostname: uniqueName('renamed'), relay: random() < 0.5 });
      } else if (r < 0.62) {
        const d = pick((await admin.devices.list(org)).items);
        if (d) await admin.devices.delete(org, d.id);
      } else if (r < 0.75) {
        await admin.securityGroups.create(org, {
          description: uniqueName('sg'),
          inbound_rules: [{ ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8'] }],
        });
      } else if (r < 0.85) {
        const g = pick((await admin.securityGroups.list(org)).items);
        if (g) await admin.securityGroups.update(org, g.id, { description: uniqueName('sg-renamed') });
      } else if (r < 0.93) {
        const g = pick((await admin.securityGroups.list(org)).items);
        if (g) await admin.securityGroups.delete(org, g.id);
      } else {
        await admin.organizations.update(org, { description: uniqueName('org'), network: { mtu: 1280 + Math.floor(random() * 200) } });
      }
      applied += 1;
    } catch (err) {
      if (!raced(err)) throw err;
    }
  }
  return applied;
}
