import { randomBytes } from 'node:crypto';
import { paths } from '../../protocol/index.js';
import { ApiCallError, type FleetApi } from '../http-api.js';
import type { AgentIdentity } from '../load/agent-messages.js';
import { log } from '../log.js';
import { nowMs } from '../clock.js';
import { deviceTag } from './policy-document.js';

/** An organization ready for N simulated agents. */
export interface SeededFleet {
  org: string;
  /** The security group the change loops PATCH. */
  groupId: string;
  /** One per device, in creation order. */
  identities: AgentIdentity[];
  /** The organization's head revision after seeding. */
  head: number;
  seedSeconds: number;
}

/** Device creations in flight (the fleet's enrollment isn't what is measured). */
const CONCURRENCY = 16;

async function created(api: FleetApi, path: string, body: unknown, what: string): Promise<Record<string, unknown>> {
  const res = await api.request('POST', path, body);
  if (res.status !== 201) throw new ApiCallError(res.status, res.body, what);
  return JSON.parse(res.body) as Record<string, unknown>;
}

/**
 * A fresh organization with one security group and N devices, created
 * through the API (`POST .../devices`, 16 in flight): each device's token
 * is only in its creation's answer (`device_token`), so there is no
 * shortcut around the API. Each device carries one of (h)'s tags from its
 * creation, so that the policy document's groups bind the fleet. Aborts
 * between creations when `signal` does.
 */
export async function seedFleet(api: FleetApi, n: number, label: string, signal: AbortSignal): Promise<SeededFleet> {
  const started = nowMs();
  const org = await api.createOrganization(`${label}-${process.pid}-${Date.now().toString(36)}`);
  const group = await created(api, paths.securityGroups(org), { description: `${label} fleet` }, 'create security group');
  const identities = new Array<AgentIdentity>(n);
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      signal.throwIfAborted();
      const i = next++;
      if (i >= n) return;
      const d = await created(api, paths.devices(org), { hostname: `${label}-${i}`, public_key: randomBytes(32).toString('base64'), tags: [deviceTag(i)] }, 'create device');
      const token = d['device_token'];
      if (typeof token !== 'string') throw new Error('POST .../devices answered without a device_token');
      identities[i] = { deviceId: String(d['id']), token };
      if (++done % 2_000 === 0) log.info({ devices: done, of: n }, 'seeding');
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, worker));
  const head = await api.headRevision(org);
  return { org, groupId: String(group['id']), identities, head, seedSeconds: (nowMs() - started) / 1000 };
}
