import { paths } from '../../../src/protocol/index.js';
import { uniqueName, wgKey, type Harness, type InjectResponse } from '../../server/fixtures.js';

/** Ids the writers know about; a writer takes an id out before deleting it. */
export interface KnownIds {
  devices: string[];
  groups: string[];
}

/** Statuses a racing write may legitimately get (the object went away, or a group is in use). */
const RACE_STATUSES = new Set([404, 409]);

function pick<T>(rand: () => number, items: readonly T[]): T | undefined {
  return items.length === 0 ? undefined : items[Math.floor(rand() * items.length)];
}

function take<T>(rand: () => number, items: T[]): T | undefined {
  if (items.length === 0) return undefined;
  return items.splice(Math.floor(rand() * items.length), 1)[0];
}

function endpoints(rand: () => number): { source: string; address: string }[] {
  return Array.from({ length: Math.floor(rand() * 3) }, () => ({
    source: 'stun',
    address: `198.51.100.${1 + Math.floor(rand() * 250)}:${1024 + Math.floor(rand() * 60000)}`,
  }));
}

function rules(rand: () => number): unknown[] {
  return Array.from({ length: Math.floor(rand() * 3) }, () => {
    const from = Math.floor(rand() * 1000);
    return { ip_protocol: 'tcp', from_port: from, to_port: from + Math.floor(rand() * 10), ip_ranges: [`10.${Math.floor(rand() * 250)}.0.0/16`] };
  });
}

/**
 * One random write to an organization: create, update or delete a device or
 * a security group, patch the organization, or a PATCH that changes nothing.
 * Returns an error message for an unexpected response, else undefined.
 */
export async function randomWrite(h: Harness, org: string, rand: () => number, known: KnownIds): Promise<string | undefined> {
  const r = rand();
  let res: InjectResponse | undefined;
  let expected = 200;
  if (r < 0.22) {
    const group = rand() < 0.4 ? pick(rand, known.groups) : undefined;
    expected = 201;
    res = await h.call('POST', paths.devices(org), {
      token: h.admin,
      body: { hostname: uniqueName('h'), public_key: wgKey(), endpoints: endpoints(rand), security_group_id: group ?? null },
    });
    if (res.statusCode === 201) known.devices.push(String((res.json() as { id: string }).id));
  } else if (r < 0.47) {
    const id = pick(rand, known.devices);
    if (id === undefined) return undefined;
    const body =
      rand() < 0.5
        ? { hostname: uniqueName('h'), endpoints: endpoints(rand) }
        : { relay: rand() < 0.5, security_group_id: rand() < 0.5 ? (pick(rand, known.groups) ?? null) : null };
    res = await h.call('PATCH', paths.device(org, id), { token: h.admin, body });
  } else if (r < 0.62) {
    const id = take(rand, known.devices);
    if (id === undefined) return undefined;
    expected = 204;
    res = await h.call('DELETE', paths.device(org, id), { token: h.admin });
  } else if (r < 0.72) {
    expected = 201;
    res = await h.call('POST', paths.securityGroups(org), { token: h.admin, body: { description: uniqueName('g'), inbound_rules: rules(rand) } });
    if (res.statusCode === 201) known.groups.push(String((res.json() as { id: string }).id));
  } else if (r < 0.82) {
    const id = pick(rand, known.groups);
    if (id === undefined) return undefined;
    res = await h.call('PATCH', paths.securityGroup(org, id), { token: h.admin, body: { outbound_rules: rules(rand) } });
  } else if (r < 0.89) {
    const id = take(rand, known.groups);
    if (id === undefined) return undefined;
    expected = 204;
    res = await h.call('DELETE', paths.securityGroup(org, id), { token: h.admin });
    // Still in use: it stays.
    if (res.statusCode === 409) known.groups.push(id);
  } else if (r < 0.96) {
    res = await h.call('PATCH', paths.organization(org), { token: h.admin, body: { description: uniqueName('d') } });
  } else {
    // A PATCH that changes nothing: no revision, no event.
    res = await h.call('PATCH', paths.organization(org), { token: h.admin, body: {} });
  }
  if (res.statusCode === expected || RACE_STATUSES.has(res.statusCode)) return undefined;
  // A device pointed at a group another writer just deleted.
  if (res.statusCode === 400 && res.body.includes('/security_group_id')) return undefined;
  return `${res.statusCode} ${res.body.slice(0, 200)}`;
}
