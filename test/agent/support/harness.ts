/**
 * Helpers of the agent tests: a real server (in this process, listening on
 * 127.0.0.1), organizations with registration keys, agents run in-process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { Agent, type AgentDeps, type AgentOptions } from '../../../src/agent/index.js';
import { FleetplaneClient } from '../../../src/client/index.js';
import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';

export const ADMIN_TOKEN = 'fpa_agent_tests';

export async function startListeningServer(overrides: Partial<Settings> = {}): Promise<{ server: FleetServer; url: string; admin: FleetplaneClient }> {
  const server = await startServer({
    memory: true,
    host: '127.0.0.1',
    port: 0,
    logLevel: 'silent',
    adminToken: ADMIN_TOKEN,
    bookmarkInterval: 1,
    revocationCheckInterval: 0.2,
    ...overrides,
  });
  const url = server.url;
  if (url === undefined) throw new Error('the test server is not listening');
  return { server, url, admin: new FleetplaneClient({ baseUrl: url, token: ADMIN_TOKEN }) };
}

/** A listening server shared by a test file, and state directories removed after it. */
export interface AgentTestServer {
  readonly url: string;
  readonly admin: FleetplaneClient;
  /** A fresh directory, removed when the file's tests end. */
  stateDir(): Promise<string>;
}

/** Starts the server before the file's tests (`setup` first); after them, removes the state directories and stops it. */
export function useAgentServer(dirPrefix: string, setup: () => void = () => undefined): AgentTestServer {
  let started: { server: FleetServer; url: string; admin: FleetplaneClient } | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  const get = () => {
    if (!started) throw new Error('the agent test server is not started');
    return started;
  };
  beforeAll(async () => {
    setup();
    started = await startListeningServer();
  }, 120_000);
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await started?.server.close();
  });
  return {
    get url() {
      return get().url;
    },
    get admin() {
      return get().admin;
    },
    async stateDir() {
      const d = await tempDir(dirPrefix);
      cleanups.push(d.remove);
      return d.path;
    },
  };
}

export async function orgWithKey(admin: FleetplaneClient, name: string): Promise<{ org: string; key: string }> {
  const org = await admin.organizations.create({ name: `${name}-${process.pid}-${Date.now().toString(36)}` });
  const key = await admin.registrationKeys.create(org.id, { description: 'agent tests', single_use: false });
  return { org: org.id, key: key.key };
}

export async function tempDir(prefix: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export function agentOptions(over: Partial<AgentOptions> & Pick<AgentOptions, 'stateDir'>): AgentOptions {
  return {
    server: undefined,
    org: undefined,
    registrationKey: undefined,
    caFile: undefined,
    dataplane: 'render',
    interfaceName: 'fp0',
    hostname: 'test-host',
    listenPort: 51820,
    endpoints: [],
    advertiseRoutes: [],
    localPort: 0,
    stun: true,
    stunServer: undefined,
    stunPort: 3478,
    stunAltPort: 3479,
    stunIntervalMs: 60_000,
    relay: true,
    resyncIntervalMs: 300_000,
    statusIntervalMs: 30_000,
    cleanupOnExit: false,
    logLevel: 'silent',
    ...over,
  };
}

export interface RunningAgent {
  agent: Agent;
  deviceId: string;
  localPort: number;
  stop: () => Promise<void>;
  /** Settles when `run` ends: undefined after a clean stop, the error after a fatal one. */
  done: Promise<unknown>;
}

/** Starts an agent in this process and waits until its local API listens. */
export async function runAgent(options: AgentOptions, deps: Partial<AgentDeps> = {}): Promise<RunningAgent> {
  let ready!: (info: { device_id: string; local_port: number }) => void;
  const readyP = new Promise<{ device_id: string; local_port: number }>((r) => (ready = r));
  const agent = new Agent(options, { logger: pino({ level: process.env['FP_TEST_AGENT_LOG'] ?? 'silent' }), ...deps, onReady: ready });
  const ctl = new AbortController();
  const done = agent.run(ctl.signal).then(
    () => undefined,
    (err: unknown) => err,
  );
  const info = await Promise.race([readyP, done.then((err) => Promise.reject(err instanceof Error ? err : new Error('the agent stopped before it was ready')))]);
  return {
    agent,
    deviceId: info.device_id,
    localPort: info.local_port,
    done,
    stop: async () => {
      ctl.abort();
      await done;
    },
  };
}

/** Polls `check` every 20 ms until it returns a truthy value. */
export async function until<T>(check: () => Promise<T> | T, what: string, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function localJson(port: number, method: 'GET' | 'POST', path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
