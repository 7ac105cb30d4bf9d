import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import WebSocket from 'ws';
import { HEADERS, QUERY, bearerAuthorization, paths, type CreatedOrgToken, type CreatedRegistrationKey, type EnrolledDevice, type Organization } from '../../src/protocol/index.js';
import { TunnelClient, type AgentMethodHandler, type TunnelClientOptions } from '../../src/agent/tunnel/index.js';

export const silent = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

/** Polls `condition` until it holds; fails naming `what` after `timeoutMs`. */
export async function eventually(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface HttpAnswer {
  status: number;
  body: unknown;
}

export async function http(base: string, method: string, path: string, token: string | undefined, body?: unknown, signal?: AbortSignal): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers[HEADERS.authorization] = `Bearer ${token}`;
  if (body !== undefined) headers[HEADERS.contentType] = 'application/json';
  const res = await plainRequest(new URL(path, base), method, headers, body === undefined ? undefined : JSON.stringify(body), signal);
  return { status: res.status, body: res.text === '' ? undefined : (JSON.parse(res.text) as unknown) };
}

/**
 * One request on a connection of its own (no keep-alive pool). A pool may
 * hand a request a connection it opened for an earlier request and never
 * used; the server answers such a connection 408 once its headers timeout
 * passes (its defence against clients that connect and send nothing), and
 * a request written just then reads that 408 as its answer.
 */
function plainRequest(url: URL, method: string, headers: Record<string, string>, body?: string, signal?: AbortSignal): Promise<{ status: number; text: string }> {
  if (url.protocol !== 'http:') return Promise.reject(new Error(`these helpers speak plain HTTP only, not ${url.href}`));
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent: false, ...(signal ? { signal } : {}) }, (res) => {
      res.setEncoding('utf8');
      let text = '';
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `POST .../rpc/{method}?wait=S` with `params`. */
export function rpc(
  base: string,
  token: string,
  org: string,
  device: string,
  method: string,
  opts: { params?: Record<string, unknown>; wait?: number; signal?: AbortSignal } = {},
): Promise<HttpAnswer> {
  const query = opts.wait === undefined ? '' : `?${QUERY.wait}=${opts.wait}`;
  return http(base, 'POST', `${paths.deviceRpc(org, device, method)}${query}`, token, opts.params ?? {}, opts.signal);
}

export function errorCode(a: HttpAnswer): string | undefined {
  const e = (a.body as { error?: { code?: string } } | undefined)?.error;
  return e?.code;
}

export function agentCode(a: HttpAnswer): string | undefined {
  const e = (a.body as { error?: { details?: { code?: string } } } | undefined)?.error;
  return e?.details?.code;
}

async function ok<T>(p: Promise<HttpAnswer>, status: number): Promise<T> {
  const a = await p;
  if (a.status !== status) throw new Error(`expected ${status}, got ${a.status}: ${JSON.stringify(a.body)}`);
  return a.body as T;
}

/** An organization with an admin and a read token, enrolling devices through a registration key. */
export class Fleet {
  private constructor(
    readonly base: string,
    readonly admin: string,
    readonly org: string,
    readonly orgAdmin: string,
    readonly reader: string,
    readonly registrationKey: string,
  ) {}

  static async create(base: string, admin: string): Promise<Fleet> {
    const org = await ok<Organization>(http(base, 'POST', paths.organizations(), admin, { name: `gw-${randomBytes(6).toString('hex')}` }), 201);
    const orgAdmin = (await ok<CreatedOrgToken>(http(base, 'POST', paths.tokens(org.id), admin, { role: 'admin' }), 201)).token;
    const reader = (await ok<CreatedOrgToken>(http(base, 'POST', paths.tokens(org.id), admin, { role: 'read' }), 201)).token;
    const key = (await ok<CreatedRegistrationKey>(http(base, 'POST', paths.registrationKeys(org.id), admin, { description: 'test', single_use: false }), 201)).key;
    return new Fleet(base, admin, org.id, orgAdmin, reader, key);
  }

  /** Enrolls a device with the registration key, as an agent does. */
  async enroll(): Promise<{ id: string; token: string }> {
    const d = await ok<EnrolledDevice>(
      http(this.base, 'POST', paths.devices(this.org), this.registrationKey, { hostname: `h-${randomBytes(4).toString('hex')}`, public_key: randomBytes(32).toString('base64') }),
      201,
    );
    return { id: d.id, token: d.device_token };
  }
}

/** A running tunnel client with counting handlers; `stop()` aborts it and waits. */
export interface TestAgent {
  client: TunnelClient;
  /** Calls per method. */
  calls: Map<string, number>;
  stop(): Promise<void>;
}

export function startAgent(
  url: TunnelClientOptions['url'],
  token: string,
  handlers: Record<string, AgentMethodHandler> = {},
  options: Partial<TunnelClientOptions> = {},
): TestAgent {
  const calls = new Map<string, number>();
  const client = new TunnelClient({ url, token, revision: () => 7, logger: silent, backoff: { initialMs: 100, maxMs: 500 }, ...options });
  for (const [method, handler] of Object.entries(handlers)) {
    client.register(method, async (params, ctx) => {
      calls.set(method, (calls.get(method) ?? 0) + 1);
      return handler(params, ctx);
    });
  }
  const ac = new AbortController();
  const running = client.run(ac.signal);
  return {
    client,
    calls,
    async stop() {
      ac.abort();
      await running;
    },
  };
}

/** The value of a Prometheus sample (`name{labels}`), 0 when absent. */
export async function metric(base: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const { status, text } = await plainRequest(new URL('/metrics', base), 'GET', {});
  // An error body holds no sample: reading it as 0 would pass every check for 0.
  if (status !== 200) throw new Error(`GET /metrics answered ${status}: ${text.slice(0, 500)}`);
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const open = line.indexOf('{');
    const labelText = open >= 0 && open < line.indexOf(' ') ? line.slice(open + 1, line.indexOf('}')) : '';
    if (want.every((w) => labelText.split(',').includes(w))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const GATEWAY_SRC = fileURLToPath(new URL('../../src/server/gateway/agent-gateway.ts', import.meta.url));
const GATEWAY_DIST = fileURLToPath(new URL('../../dist/server/gateway/agent-gateway.js', import.meta.url));

/** Fails unless `npx tsc -p tsconfig.json` (or `npm test`) built the server these tests spawn. */
export function requireBuild(): void {
  if (!existsSync(MAIN) || !existsSync(GATEWAY_DIST)) throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` first (npm test does)');
  if (statSync(GATEWAY_DIST).mtimeMs < statSync(GATEWAY_SRC).mtimeMs) {
    process.stderr.write('\n*** dist/ looks older than src/server/gateway: run `npx tsc -p tsconfig.json` ***\n');
  }
}

/** A `fleetplane serve` process. */
export interface Replica {
  readonly url: string;
  readonly privateUrl: string;
  readonly process: ChildProcess;
  output(): string;
  /** SIGKILL, and waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful), and waits for the exit. */
  stop(): Promise<void>;
}

export async function startReplica(args: { privatePort: number; adminToken: string; secret: string; extra: string[] }): Promise<Replica> {
  const argv = [
    MAIN,
    'serve',
    '--host', '127.0.0.1',
    '--port', '0',
    '--private-port', String(args.privatePort),
    '--private-secret', args.secret,
    '--admin-token', args.adminToken,
    '--log-level', process.env['TEST_LOG_LEVEL'] ?? 'warn',
    ...args.extra,
  ];
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`replica did not start:\n${out}`)), 30_000);
    const check = (): void => {
      const m = /fleetplane is listening on (\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`replica exited with ${String(code)}:\n${out}`));
    });
  });
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return {
    url,
    privateUrl: `http://127.0.0.1:${args.privatePort}`,
    process: child,
    output: () => out,
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
  };
}

/** The HTTP status a WebSocket upgrade of `url` with `token` gets (101 when it opened). */
export function wsUpgradeStatus(url: string, token: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, token === undefined ? {} : { headers: { [HEADERS.authorization]: bearerAuthorization(token) } });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (req, res) => {
      req.destroy();
      resolve(res.statusCode ?? 0);
    });
    ws.once('error', reject);
  });
}
