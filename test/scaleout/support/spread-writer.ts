import { paths } from '../../../src/protocol/index.js';
import { rest, uniqueName, wgKey, type RestResponse } from './rest.js';

/** Statuses a racing write may legitimately get (the object went away, or a group is in use, or a retried create already happened). */
const RACE_STATUSES = new Set([404, 409]);
/** Replicas tried for one write before it counts as failed. */
const MAX_ATTEMPTS = 8;

interface Planned {
  method: string;
  path: string;
  body?: unknown;
  expected: number;
  /** Bookkeeping once the write's outcome is known. */
  done?: (res: RestResponse) => void;
}

/**
 * Random REST writes to one organization (create, update, delete devices
 * and security groups; now and then the organization itself), each sent to
 * a random replica. A write whose connection fails (a dead replica) is sent
 * again to another one.
 */
export class SpreadWriter {
  readonly devices: string[] = [];
  readonly groups: string[] = [];
  /** Unexpected answers (a correct server gives none). */
  readonly errors: string[] = [];
  /** Sends that failed at the connection level and were retried elsewhere, by replica URL. */
  readonly failedSends = new Map<string, number>();
  /** Writes answered, by replica URL. */
  readonly answered = new Map<string, number>();
  writes = 0;

  constructor(
    private readonly urls: () => readonly string[],
    private readonly org: string,
    private readonly rand: () => number,
  ) {}

  /** One random write; resolves once some replica answered it. */
  async write(): Promise<void> {
    const plan = this.plan();
    if (!plan) return;
    const tried = new Set<string>();
    let lastError: unknown;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const all = this.urls();
      const fresh = all.filter((u) => !tried.has(u));
      const url = this.pick(fresh.length > 0 ? fresh : all);
      if (url === undefined) break;
      tried.add(url);
      let res: RestResponse;
      try {
        res = await rest(url, plan.method, plan.path, plan.body);
      } catch (err) {
        lastError = err;
        this.failedSends.set(url, (this.failedSends.get(url) ?? 0) + 1);
        continue;
      }
      this.writes++;
      this.answered.set(url, (this.answered.get(url) ?? 0) + 1);
      plan.done?.(res);
      const fine =
        res.status === plan.expected ||
        RACE_STATUSES.has(res.status) ||
        // A device pointed at a group another writer just deleted.
        (res.status === 400 && res.text.includes('/security_group_id'));
      if (!fine) this.errors.push(`${plan.method} ${plan.path} on ${url}: ${res.status} ${res.text.slice(0, 200)}`);
      return;
    }
    this.errors.push(`${plan.method} ${plan.path}: no replica answered after ${MAX_ATTEMPTS} attempts: ${String(lastError)}`);
  }

  private pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[Math.floor(this.rand() * items.length)];
  }

  private take(items: string[]): string | undefined {
    if (items.length === 0) return undefined;
    return items.splice(Math.floor(this.rand() * items.length), 1)[0];
  }

  private endpoints(): { source: string; address: string }[] {
    return Array.from({ length: Math.floor(this.rand() * 3) }, () => ({
      source: 'stun',
      address: `198.51.100.${1 + Math.floor(this.rand() * 250)}:${1024 + Math.floor(this.rand() * 60000)}`,
    }));
  }

  private rules(): unknown[] {
    return Array.from({ length: Math.floor(this.rand() * 3) }, () => {
      const from = Math.floor(this.rand() * 1000);
      return { ip_protocol: 'tcp', from_port: from, to_port: from + Math.floor(this.rand() * 10), ip_ranges: [`10.${Math.floor(this.rand() * 250)}.0.0/16`] };
    });
  }

  private plan(): Planned | undefined {
    const org = this.org;
    const r = this.rand();
    const created = (list: string[]) => (res: RestResponse) => {
      if (res.status === 201) list.push(String((JSON.parse(res.text) as { id: string }).id));
    };
    if (r < 0.3) {
      const group = this.rand() < 0.4 ? this.pick(this.groups) : undefined;
      return {
        method: 'POST',
        path: paths.devices(org),
        body: { hostname: uniqueName('h'), public_key: wgKey(), endpoints: this.endpoints(), security_group_id: group ?? null },
        expected: 201,
        done: created(this.devices),
      };
    }
    if (r < 0.55) {
      const id = this.pick(this.devices);
      if (id === undefined) return undefined;
      const body =
        this.rand() < 0.5
          ? { hostname: uniqueName('h'), endpoints: this.endpoints() }
          : { relay: this.rand() < 0.5, security_group_id: this.rand() < 0.5 ? (this.pick(this.groups) ?? null) : null };
      return { method: 'PATCH', path: paths.device(org, id), body, expected: 200 };
    }
    if (r < 0.68) {
      const id = this.take(this.devices);
      if (id === undefined) return undefined;
      return { method: 'DELETE', path: paths.device(org, id), expected: 204 };
    }
    if (r < 0.8) {
      return {
        method: 'POST',
        path: paths.securityGroups(org),
        body: { description: uniqueName('g'), inbound_rules: this.rules() },
        expected: 201,
        done: created(this.groups),
      };
    }
    if (r < 0.9) {
      const id = this.pick(this.groups);
      if (id === undefined) return undefined;
      return { method: 'PATCH', path: paths.securityGroup(org, id), body: { outbound_rules: this.rules() }, expected: 200 };
    }
    if (r < 0.96) {
      const id = this.take(this.groups);
      if (id === undefined) return undefined;
      const groups = this.groups;
      return {
        method: 'DELETE',
        path: paths.securityGroup(org, id),
        expected: 204,
        done: (res) => {
          // Still in use: it stays.
          if (res.status === 409) groups.push(id);
        },
      };
    }
    return { method: 'PATCH', path: paths.organization(org), body: { description: uniqueName('d') }, expected: 200 };
  }
}
