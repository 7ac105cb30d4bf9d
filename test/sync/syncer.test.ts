/**
 * `fleetplane sync`'s service against the real server (in-memory storage):
 * it applies a source once and only when it changed, keeps the last good
 * document when the source breaks (counting why), forces a sync on
 * POST /sync, serves its metrics, retries an unreachable server with
 * backoff, and stops on abort.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient, type PolicyApi } from '../../src/client/index.js';
import { SYNC_DEFAULT_HOST, SYNC_DEFAULT_PORT, SYNC_METRICS, SYNC_ROUTES, type SyncResult } from '../../src/protocol/index.js';
import { parseSyncOptions, startSyncService, SyncOptionsError, type PolicyClient, type SyncService } from '../../src/sync/index.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, until, type RealServer } from '../client-e2e/support/real-server.js';
import { POLICY_SAMPLE } from '../support/policy-sample.js';

let rs: RealServer;
const dir = mkdtempSync(join(tmpdir(), 'fp-sync-'));
const running: Array<{ stop: AbortController; service: SyncService }> = [];

beforeAll(async () => {
  rs = await startRealServer();
});
afterEach(async () => {
  for (const { stop, service } of running.splice(0)) {
    stop.abort();
    await service.close();
  }
});
afterAll(async () => {
  await rs?.close();
  rmSync(dir, { recursive: true, force: true });
});

const SAMPLE = POLICY_SAMPLE;

/** The policy API with its calls counted. */
function counted(api: PolicyApi): PolicyClient & { gets: number; applies: number } {
  const c = {
    gets: 0,
    applies: 0,
    get: (...args: Parameters<PolicyApi['get']>) => {
      c.gets++;
      return api.get(...args);
    },
    apply: (...args: Parameters<PolicyApi['apply']>) => {
      c.applies++;
      return api.apply(...args);
    },
  };
  return c;
}

/** A pino logger whose lines are kept, parsed. */
function capturedLogger(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

interface Started {
  service: SyncService;
  client: ReturnType<typeof counted>;
  lines: Array<Record<string, unknown>>;
  orgId: string;
  admin: FleetplaneClient;
}

async function start(opts: { from: string; intervalMs: number; baseUrl?: string; orgId?: string; backoff?: { initialMs: number; maxMs: number } }): Promise<Started> {
  const orgId = opts.orgId ?? (await rs.admin.organizations.create({ name: uniqueName('sync') })).id;
  const admin = new FleetplaneClient({ baseUrl: opts.baseUrl ?? rs.url, token: ADMIN_TOKEN });
  const client = counted(admin.policy);
  const { logger, lines } = capturedLogger();
  const stop = new AbortController();
  const service = await startSyncService({
    client,
    org: async () => orgId,
    from: opts.from,
    intervalMs: opts.intervalMs,
    timeoutMs: 2_000,
    listen: { host: '127.0.0.1', port: 0 },
    logger,
    signal: stop.signal,
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
  });
  running.push({ stop, service });
  return { service, client, lines, orgId, admin };
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function forceSync(service: SyncService): Promise<SyncResult> {
  const res = await fetch(`${service.url}${SYNC_ROUTES.sync}`, { method: 'POST' });
  expect(res.status).toBe(200);
  return (await res.json()) as SyncResult;
}

async function scrape(service: SyncService): Promise<string> {
  const res = await fetch(`${service.url}${SYNC_ROUTES.metrics}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return res.text();
}

/** One sample's value from the exposition text; undefined when absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const errors = (text: string, reason: string): number | undefined => sample(text, SYNC_METRICS.errorsTotal, `{reason="${reason}"}`);

describe('the policy syncer', () => {
  it('applies the file once: later ticks find it in sync and PUT nothing', async () => {
    const from = file('once.yaml', SAMPLE);
    const { service, client, orgId, admin } = await start({ from, intervalMs: 50 });
    await until(() => service.syncer.revision !== null, 'the first apply');
    const revision = (await admin.organizations.get(orgId)).revision;
    expect(service.syncer.revision).toBe(revision);
    // Several more ticks: each reads the server's document, none writes.
    const gets = client.gets;
    await until(() => client.gets >= gets + 3, 'three more syncs');
    expect(client.applies).toBe(1);
    expect(await admin.policy.get(orgId)).toMatchObject({ managed: true, text: SAMPLE });
    expect((await admin.organizations.get(orgId)).revision).toBe(revision);

    const metrics = await scrape(service);
    expect(sample(metrics, SYNC_METRICS.appliesTotal)).toBe(1);
    expect(sample(metrics, SYNC_METRICS.lastAppliedRevision)).toBe(revision);
    expect(sample(metrics, SYNC_METRICS.sourceOk)).toBe(1);
    expect(sample(metrics, SYNC_METRICS.lastSuccessTimestampSeconds)).toBeGreaterThan(Date.now() / 1000 - 60);
    for (const reason of ['source', 'invalid', 'tests', 'server']) expect(errors(metrics, reason)).toBe(0);
  });

  it('a broken or failing document keeps the last good one on the server, and is logged and counted; POST /sync forces a sync', async () => {
    const from = file('forced.yaml', SAMPLE);
    // An hour: every sync after the first is a forced one.
    const { service, client, lines, orgId, admin } = await start({ from, intervalMs: 3_600_000 });
    await until(() => service.syncer.revision !== null, 'the first apply');
    const good = service.syncer.revision;
    expect(good).not.toBeNull();

    // Unchanged: a forced sync does nothing.
    expect(await forceSync(service)).toEqual({ applied: false, revision: good });
    expect(client.applies).toBe(1);

    file('forced.yaml', SAMPLE.replace('proto: tcp', 'proto: tcpx'));
    const invalid = await forceSync(service);
    expect(invalid).toMatchObject({ applied: false, revision: good, error: { reason: 'invalid', code: 'policy_invalid', details: { line: 9 } } });
    expect(await admin.policy.get(orgId)).toMatchObject({ managed: true, text: SAMPLE });
    const logged = lines.find((l) => l['reason'] === 'invalid');
    expect(logged).toMatchObject({ level: 50, code: 'policy_invalid', status: 400, line: 9, source: from });
    expect(String(logged?.['msg'])).toMatch(/the server keeps its document/);

    file('forced.yaml', SAMPLE.replace('expect: allow', 'expect: deny'));
    expect(await forceSync(service)).toMatchObject({ applied: false, revision: good, error: { reason: 'tests', code: 'policy_test_failed' } });

    rmSync(from);
    expect(await forceSync(service)).toMatchObject({ applied: false, revision: good, error: { reason: 'source' } });
    expect(await admin.policy.get(orgId)).toMatchObject({ text: SAMPLE });

    let metrics = await scrape(service);
    expect([errors(metrics, 'invalid'), errors(metrics, 'tests'), errors(metrics, 'source'), errors(metrics, 'server')]).toEqual([1, 1, 1, 0]);
    expect(sample(metrics, SYNC_METRICS.sourceOk)).toBe(0);
    expect(sample(metrics, SYNC_METRICS.appliesTotal)).toBe(1);

    // A good document again: applied at once by the forced sync, at a new revision.
    const next = SAMPLE.replace('ports: 5432', 'ports: 5433').replace('tcp:5432', 'tcp:5433');
    file('forced.yaml', next);
    const applied = await forceSync(service);
    const revision = (await admin.organizations.get(orgId)).revision;
    expect(applied).toEqual({ applied: true, revision });
    expect(revision).toBeGreaterThan(good ?? 0);
    expect(await admin.policy.get(orgId)).toMatchObject({ text: next });
    metrics = await scrape(service);
    expect(sample(metrics, SYNC_METRICS.lastAppliedRevision)).toBe(revision);
    expect(sample(metrics, SYNC_METRICS.appliesTotal)).toBe(2);
    expect(sample(metrics, SYNC_METRICS.sourceOk)).toBe(1);
  });

  it('a change made on the server is put back at the next sync', async () => {
    const from = file('drift.yaml', SAMPLE);
    const { service, client, orgId, admin } = await start({ from, intervalMs: 3_600_000 });
    await until(() => service.syncer.revision !== null, 'the first apply');
    await admin.policy.apply(orgId, SAMPLE.replace('# who may tag', '# edited by hand'));
    expect(await forceSync(service)).toMatchObject({ applied: true });
    expect((await admin.policy.get(orgId)).text).toBe(SAMPLE);
  });

  describe('an http(s) source', () => {
    let http: Server;
    let body = SAMPLE;
    let status = 200;
    let url = '';
    beforeAll(async () => {
      http = createServer((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/yaml' });
        res.end(body);
      });
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const address = http.address();
      url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/policy.yaml`;
    });
    afterAll(async () => {
      await new Promise((resolve) => http.close(resolve));
    });

    it('is fetched at each sync; an error answer is a source error, retried with backoff before the interval', async () => {
      const { service, client, orgId, admin } = await start({ from: url, intervalMs: 3_600_000, backoff: { initialMs: 5, maxMs: 20 } });
      await until(() => service.syncer.revision !== null, 'the first apply');
      expect((await admin.policy.get(orgId)).text).toBe(SAMPLE);
      status = 503;
      body = 'down for maintenance';
      const failed = await forceSync(service);
      expect(failed).toMatchObject({ applied: false, error: { reason: 'source' } });
      expect(failed.error?.message).toMatch(/HTTP 503/);
      // A 503 may pass by itself: retried well before the hour is over.
      await until(async () => (errors(await scrape(service), 'source') ?? 0) >= 3, 'retries of the source');
      status = 200;
      body = SAMPLE.replace('# who may tag', '# fetched');
      await until(async () => (await admin.policy.get(orgId)).text === body, 'the retry that applies');
      expect((await admin.policy.get(orgId)).text).toBe(body);
    });
  });

  it('an unreachable server counts as a server error and is retried with backoff; abort stops the loop', async () => {
    const from = file('unreachable.yaml', SAMPLE);
    // A port nothing listens on: the listener of a server that was closed.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const address = closed.address();
    await new Promise((resolve) => closed.close(resolve));
    const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 1}`;
    const { service, lines } = await start({ from, intervalMs: 3_600_000, baseUrl, orgId: '00000000-0000-4000-8000-000000000000', backoff: { initialMs: 5, maxMs: 20 } });
    await until(async () => (errors(await scrape(service), 'server') ?? 0) >= 3, 'three retries');
    expect(lines.some((l) => l['reason'] === 'server' && l['retryable'] === true && l['code'] === 'network_error' && l['level'] === 40)).toBe(true);

    const entry = running.pop();
    entry?.stop.abort();
    await entry?.service.close();
    await expect(fetch(`${service.url}${SYNC_ROUTES.metrics}`)).rejects.toThrow();
  });
});

describe('fleetplane sync options', () => {
  it('defaults: every 60 s, loopback port 8723, connection from ctl', () => {
    const o = parseSyncOptions(['--org', 'acme', '--from', 'policy.yaml', '--server', 'http://x'], {});
    expect(o).toEqual({
      from: 'policy.yaml',
      intervalMs: 60_000,
      timeoutMs: 10_000,
      listen: { host: SYNC_DEFAULT_HOST, port: SYNC_DEFAULT_PORT },
      logLevel: 'info',
      connection: { org: 'acme', server: 'http://x' },
    });
    expect(SYNC_DEFAULT_HOST).toBe('127.0.0.1');
  });

  it('flags win over FLEETPLANE_SYNC_*; --listen takes HOST:PORT, [v6]:PORT and :PORT', () => {
    const env = { FLEETPLANE_SYNC_FROM: 'env.yaml', FLEETPLANE_SYNC_INTERVAL: '5m', FLEETPLANE_SYNC_ORG: 'envorg' };
    expect(parseSyncOptions(['--from', 'https://git.example/p.yaml', '--interval', '90'], env)).toMatchObject({ from: 'https://git.example/p.yaml', intervalMs: 90_000, connection: { org: 'envorg' } });
    expect(parseSyncOptions(['--listen', '0.0.0.0:9464'], env).listen).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseSyncOptions(['--listen', '[::1]:0'], env).listen).toEqual({ host: '::1', port: 0 });
    expect(parseSyncOptions(['--listen', ':9000'], env).listen).toEqual({ host: '127.0.0.1', port: 9000 });
  });

  it.each([
    [[], /--from is required/],
    [['--from', 'p.yaml', '--interval', '0'], /--interval: expected a duration above 0/],
    [['--from', 'p.yaml', '--listen', 'localhost'], /--listen: expected HOST:PORT/],
    [['--from', 'p.yaml', '--listen', '127.0.0.1:70000'], /--listen: expected HOST:PORT/],
    [['--from', 'p.yaml', '--intervall', '5'], /unknown flag --intervall \(did you mean --interval\?\)/],
    [['--from', 'p.yaml', 'extra'], /unexpected argument "extra"/],
    [['--from', 'p.yaml', '--log-level', 'loud'], /--log-level: expected one of/],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseSyncOptions(argv, {})).toThrow(SyncOptionsError);
    expect(() => parseSyncOptions(argv, {})).toThrow(message);
  });
});
