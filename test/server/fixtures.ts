import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, inject } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { startServer, type FleetServer, type Settings } from '../../src/server/index.js';
import {
  HEADERS,
  paths,
  type CreatedOrgToken,
  type CreatedRegistrationKey,
  type EnrolledDevice,
  type Organization,
  type RegistrationKeyCreate,
  type SecurityGroup,
  type TokenRole,
} from '../../src/protocol/index.js';
import { createDatabase } from '../support/postgres-server.js';

/** Storage engines the store and route suites run on. */
export type BackendName = 'pglite' | 'postgres';

export interface Backend {
  name: BackendName;
  /** False when PostgreSQL is absent outside CI (global-setup fails CI runs without it). */
  available: boolean;
}

export function pgAdminUrl(): string {
  return inject('pgAdminUrl');
}

/** Both backends, for `describe.each`; PostgreSQL is marked unavailable when its cluster is absent. */
export function backends(): Backend[] {
  return [
    { name: 'pglite', available: true },
    { name: 'postgres', available: pgAdminUrl() !== '' },
  ];
}

export type Method = NonNullable<InjectOptions['method']>;
export type InjectResponse = LightMyRequestResponse;

export interface CallOptions {
  token?: string | undefined;
  body?: unknown;
  /** A raw body, sent as is (malformed JSON, oversize bodies). */
  payload?: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

/** A WireGuard public key: 32 random bytes, base64. */
export function wgKey(): string {
  return randomBytes(32).toString('base64');
}

let nameCounter = 0;
export function uniqueName(prefix = 'org'): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${nameCounter++}`;
}

/** Starts a server that is not listening (use `app.inject`), on a fresh database of `backend`. */
export async function startTestServer(backend: BackendName, overrides: Partial<Settings> = {}): Promise<FleetServer> {
  const storage: Partial<Settings> =
    backend === 'pglite' ? { memory: true } : { databaseUrl: await createDatabase(pgAdminUrl()) };
  return startServer({ logLevel: 'silent', ...storage, ...overrides }, { listen: false });
}

/** One server and the calls tests make against it. */
export class Harness {
  constructor(readonly server: FleetServer) {}

  get admin(): string {
    const token = this.server.adminToken.token;
    if (token === undefined) throw new Error('the test server has no admin token');
    return token;
  }

  async call(method: Method, url: string, opts: CallOptions = {}): Promise<InjectResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers[HEADERS.authorization] = `Bearer ${opts.token}`;
    const req: InjectOptions = { method, url, headers };
    if (opts.query) req.query = opts.query;
    if (opts.payload !== undefined) {
      req.payload = opts.payload;
      headers[HEADERS.contentType] ??= 'application/json';
    } else if (opts.body !== undefined) {
      req.payload = JSON.stringify(opts.body);
      headers[HEADERS.contentType] = 'application/json';
    }
    return this.server.app.inject(req);
  }

  /** Like `call`, but fails unless the status is `status`; returns the parsed body. */
  async ok<T>(status: number, method: Method, url: string, opts: CallOptions = {}): Promise<T> {
    const res = await this.call(method, url, { token: this.admin, ...opts });
    if (res.statusCode !== status) {
      throw new Error(`${method} ${url}: expected ${status}, got ${res.statusCode}: ${res.body}`);
    }
    return (res.body === '' ? undefined : res.json()) as T;
  }

  createOrg(body: Record<string, unknown> = {}): Promise<Organization> {
    return this.ok<Organization>(201, 'POST', paths.organizations(), { body: { name: uniqueName(), ...body } });
  }

  createGroup(org: string, body: Record<string, unknown> = {}, token?: string): Promise<SecurityGroup> {
    return this.ok<SecurityGroup>(201, 'POST', paths.securityGroups(org), { body, ...(token ? { token } : {}) });
  }

  createDevice(org: string, body: Record<string, unknown> = {}, token?: string): Promise<EnrolledDevice> {
    return this.ok<EnrolledDevice>(201, 'POST', paths.devices(org), {
      body: { hostname: uniqueName('host'), public_key: wgKey(), ...body },
      ...(token ? { token } : {}),
    });
  }

  /** A new organization with `n` devices, each enrolled with its own token (hostnames `hostname(i)`, else unique). */
  async createOrgWithDevices(n: number, hostname?: (i: number) => string): Promise<{ org: string; devices: EnrolledDevice[] }> {
    const org = (await this.createOrg()).id;
    const devices: EnrolledDevice[] = [];
    for (let i = 0; i < n; i++) devices.push(await this.createDevice(org, hostname ? { hostname: hostname(i) } : {}));
    return { org, devices };
  }

  async createToken(org: string, role: TokenRole): Promise<string> {
    const created = await this.ok<CreatedOrgToken>(201, 'POST', paths.tokens(org), { body: { role } });
    return created.token;
  }

  createRegKey(org: string, body: RegistrationKeyCreate = {}): Promise<CreatedRegistrationKey> {
    return this.ok<CreatedRegistrationKey>(201, 'POST', paths.registrationKeys(org), { body });
  }

  /** The organization's head revision, as the device list reports it. */
  async head(org: string): Promise<number> {
    const res = await this.call('GET', paths.devices(org), { token: this.admin });
    if (res.statusCode !== 200) throw new Error(`list devices: ${res.statusCode} ${res.body}`);
    return Number(res.headers[HEADERS.revision]);
  }

  /** Row counts of the tables a write touches. */
  async counts(): Promise<Record<string, number>> {
    const tables = ['objects', 'device_ips', 'tokens', 'registration_keys', 'device_status'];
    const out: Record<string, number> = {};
    for (const t of tables) {
      const rows = await this.server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`);
      out[t] = Number(rows[0]?.n ?? 0);
    }
    return out;
  }
}

/**
 * One server per describe block: started in `beforeAll`, closed in
 * `afterAll`. The returned function gives the harness inside tests.
 */
export function useServer(backend: BackendName, overrides: Partial<Settings> = {}): () => Harness {
  let harness: Harness | undefined;
  beforeAll(async () => {
    harness = new Harness(await startTestServer(backend, overrides));
  });
  afterAll(async () => {
    await harness?.server.close();
  });
  return () => {
    if (!harness) throw new Error('server not started');
    return harness;
  };
}

/** Runs `fn` with a fresh server and always closes it. */
export async function withServer<T>(
  backend: BackendName,
  fn: (h: Harness) => Promise<T>,
  overrides: Partial<Settings> = {},
): Promise<T> {
  const h = new Harness(await startTestServer(backend, overrides));
  try {
    return await fn(h);
  } finally {
    await h.server.close();
  }
}

/** A small seeded PRNG (mulberry32), so randomized tests are reproducible by seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function errorCode(res: InjectResponse): string | undefined {
  try {
    const body = res.json() as { error?: { code?: string } };
    return body.error?.code;
  } catch {
    return undefined;
  }
}
