import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { HEADERS, MEDIA, ROUTES, paths } from '../../../src/protocol/index.js';
import { ADMIN_TOKEN } from './replica-process.js';

export interface RestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Time after which a request counts as failed (a replica that hangs is as good as dead here). */
const REQUEST_TIMEOUT_MS = 15_000;

/**
 * One HTTP request on a connection of its own (so requests through one port
 * spread over `--workers` processes, and a killed replica fails only what
 * was sent to it). Rejects on connection errors, not on HTTP statuses.
 */
export function rest(base: string, method: string, path: string, body?: unknown, token: string = ADMIN_TOKEN): Promise<RestResponse> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
  const headers: Record<string, string | number> = { [HEADERS.authorization]: `Bearer ${token}` };
  if (payload) {
    headers[HEADERS.contentType] = MEDIA.json;
    headers['content-length'] = payload.length;
  }
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, headers, agent: false, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${base}${path}: no answer in ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Like `rest`, but fails unless the status is `status`; returns the parsed body. */
export async function ok<T>(status: number, base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await rest(base, method, path, body);
  if (res.status !== status) throw new Error(`${method} ${base}${path}: expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  return (res.text === '' ? undefined : JSON.parse(res.text)) as T;
}

/** A WireGuard public key: 32 random bytes, base64. */
export function wgKey(): string {
  return randomBytes(32).toString('base64');
}

let counter = 0;
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
}

export async function createOrg(base: string): Promise<string> {
  return (await ok<{ id: string }>(201, base, 'POST', paths.organizations(), { name: uniqueName('org') })).id;
}

/** The organization's head revision, as the device list reports it. */
export async function headRevision(base: string, org: string): Promise<number> {
  const res = await rest(base, 'GET', paths.devices(org));
  if (res.status !== 200) throw new Error(`list devices: ${res.status} ${res.text}`);
  return Number(res.headers[HEADERS.revision]);
}

export interface ReplicaRow {
  id: string;
  private_url: string | null;
  started_at: string;
  lease_expires_at: string;
}

export async function listReplicaRows(base: string): Promise<ReplicaRow[]> {
  return (await ok<{ items: ReplicaRow[] }>(200, base, 'GET', ROUTES.replicas)).items;
}
