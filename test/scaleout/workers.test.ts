import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import { plain } from '../watch/support/client-state.js';
import { createDatabase } from '../support/postgres-server.js';
import { openWatch } from '../watch/support/watch-client.js';
import { followersReach, plainState, startFollowers, type Follower } from './support/followers.js';
import { scrape, scrapeProcess } from './support/metrics.js';
import { ADMIN_TOKEN, ensureBuilt, killAllProcesses, printOutputOnFailure, spawnServe, type ServerProcess } from './support/replica-process.js';
import { createOrg, headRevision, listReplicaRows } from './support/rest.js';
import { delay, emptyRoamStats, eventually, serverState } from './support/roaming.js';
import { SpreadWriter } from './support/spread-writer.js';
import { prng } from '../server/fixtures.js';
import { WORKER_SEMI_SPACE_MB, embeddedWorkerEnv, privateListenerEnv, workerExecArgv } from '../../src/cli/workers.js';
import { EMBEDDED_POOL_SIZE } from '../../src/server/index.js';
import { request } from 'node:http';
import { HEADERS, paths } from '../../src/protocol/index.js';
import { Fleet, startAgent } from '../gateway/support.js';

/** A POST on a connection of its own (no keep-alive pool), so the cluster's primary picks a worker for it. */
function postOnFreshConnection(base: string, path: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method: 'POST', agent: false, headers: { [HEADERS.authorization]: `Bearer ${token}`, [HEADERS.contentType]: 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end('{}');
  });
}

const PG = inject('pgAdminUrl');
const SEED = Number(process.env['SCALEOUT_SEED'] ?? Date.now() % 1_000_000);

function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

/** A process that is gone, or a zombie (it ran its course; only its exit status is left to collect). */
function isGone(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return true;
  try {
    // The state follows the parenthesised command name.
    const text = readFileSync(stat, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

printOutputOnFailure();

describe.runIf(PG !== '')('--workers 2 on one PostgreSQL', () => {
  let primary: ServerProcess | undefined;

  beforeAll(async () => {
    ensureBuilt();
    const databaseUrl = await createDatabase(PG, 'workers');
    primary = spawnServe('workers', [
      '--workers',
      '2',
      '--database-url',
      databaseUrl,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--admin-token',
      ADMIN_TOKEN,
      '--log-level',
      'warn',
      '--safety-check-interval',
      '600',
      '--bookmark-interval',
      '1',
    ]);
    const [, url] = await primary.waitForOutput(/fleetplane is listening on (http:\/\/\S+?) \(2 workers\)/);
    primary.url = url ?? '';
  });

  afterAll(async () => {
    await killAllProcesses();
  });

  it('a request through either worker reaches an agent whose tunnel the other worker holds (no Redis)', async () => {
    const p = primary;
    if (!p) throw new Error('not started');
    await eventually(async () => (await listReplicaRows(p.url)).length === 2, 'both workers are registered replicas');
    const fleet = await Fleet.create(p.url, ADMIN_TOKEN);
    const device = await fleet.enroll();
    const agent = startAgent(p.url, device.token);
    try {
      await agent.client.whenConnected();
      // Each request on a connection of its own: the primary hands connections to the workers in
      // turn, so some land on the worker without the tunnel. Without the primary's directory they
      // wait for the agent there and end in 504 agent_not_connected.
      const answers: number[] = [];
      for (let i = 0; i < 8; i++) {
        const a = await postOnFreshConnection(p.url, paths.deviceRpc(fleet.org, device.id, 'ping') + '?wait=2', ADMIN_TOKEN);
        answers.push(a.status);
        expect(a.status, a.body).toBe(200);
        expect(JSON.parse(a.body)).toEqual({ pong: true, revision: 7 });
      }
      const routed = await scrape(p.url);
      expect(routed.value('fleetplane_agent_rpc_requests_total', { route: 'forwarded' }), 'requests forwarded from one worker to the other').toBeGreaterThan(0);
      expect(routed.value('fleetplane_agent_rpc_requests_total', { route: 'local' }), 'requests served by the worker holding the tunnel').toBeGreaterThan(0);
      expect(answers).toEqual(Array(8).fill(200));
    } finally {
      await agent.stop();
    }
  }, 60_000);

  it(`a watcher and writers through the one port see every change; SIGTERM exits 0 and leaves no worker (seed ${SEED})`, async () => {
    const p = primary;
    if (!p) throw new Error('not started');
    const url = p.url;
    // Both workers are up: each registered as a replica.
    await eventually(async () => (await listReplicaRows(url)).length === 2, 'both workers are registered replicas');
    const workers = childPids(p.pid);
    expect(workers).toHaveLength(2);
    // Each worker runs with its young generation sized (WORKER_SEMI_SPACE_MB): thousands of connections, little short-lived garbage.
    for (const pid of workers) {
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toEqual(
        expect.arrayContaining([`--min-semi-space-size=${WORKER_SEMI_SPACE_MB}`, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`]),
      );
    }

    const org = await createOrg(url);
    const stats = emptyRoamStats();
    let following = true;
    // Watchers until there is one on each worker (the primary hands connections out in turn,
    // but not strictly): with n watchers, one worker's scrape (either one answers) counting
    // between 0 and n of them proves they are split. Each scrape is a connection of its own;
    // 3 or 4 of them per round shift the turn by an odd and then an even number, so the next
    // watcher can't keep landing on the same worker as the others, whatever connections a
    // follower opens before its watch.
    const followers: Follower[] = [];
    let split = false;
    try {
      for (let n = 1; !split && n <= 8; n++) {
        followers.push(...startFollowers(org, [url], 1, () => [url], stats, SEED + n, () => following));
        await followersReach(followers, 1);
        for (let i = 0; i < 3 + (n % 2) && !split; i++) {
          const watching = (await scrapeProcess(url)).value('fleetplane_watchers');
          split = watching > 0 && watching < followers.length;
        }
      }
      expect(split, 'watchers on both workers').toBe(true);
      // A plain scrape, whichever worker answers, is the whole server: the primary sums the workers'.
      for (let i = 0; i < 4; i++) {
        const all = await scrape(url);
        expect(all.value('fleetplane_watchers')).toBe(followers.length);
        expect(all.value('fleetplane_up')).toBe(1);
      }

      // Every request on a connection of its own, so they too go to the workers in turn. Whichever
      // worker serves a write, one of the watchers is on the other: it hears of it only by the bus.
      const writer = new SpreadWriter(() => [url], org, prng(SEED + 2));
      for (let i = 0; i < 60; i++) await writer.write();
      expect(writer.errors).toEqual([]);
      await followersReach(followers, await headRevision(url, org));
      const server = plain(await serverState(url, org));
      for (const f of followers) {
        expect(f.client.watch.violations, f.client.name).toEqual([]);
        expect(plainState(f), f.client.name).toEqual(server);
      }
      expect(stats.brokenStreams).toBe(0);
    } finally {
      following = false;
      await Promise.all(followers.map((f) => f.run));
    }

    // The stream of a watcher still connected when the server stops ends with `unavailable`.
    const last = await openWatch({ url, org, token: ADMIN_TOKEN }, WATCH_KINDS.map((kind) => ({ kind })));
    await eventually(() => last.events.filter((e) => e.type === 'tail').length === WATCH_KINDS.length, 'the last watcher reached its tails');
    p.child.kill('SIGTERM');
    const exit = await Promise.race([p.exited, delay(20_000).then(() => 'still running')]);
    expect(exit, `${p.output()}\nworkers: ${workers.map((w) => `${w} gone ${isGone(w)}`).join(', ')}`).toEqual({ code: 0, signal: null });
    const end = await last.rest();
    expect(end.at(-1)).toMatchObject({ type: 'error', value: { code: 'unavailable' } });
    for (const pid of workers) expect(isGone(pid), `worker ${pid} is gone`).toBe(true);
  }, 60_000);
});

describe('--workers 2 on the embedded PostgreSQL', () => {
  it('each worker reaches the primary\'s PostgreSQL with the embedded pool size', async () => {
    ensureBuilt();
    const dataDir = mkdtempSync(join(tmpdir(), 'fleetplane-workers-'));
    const p = spawnServe('workers-embedded', ['--workers', '2', '--data-dir', dataDir, '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn']);
    try {
      await p.waitForOutput(/fleetplane is listening on (http:\/\/\S+?) \(2 workers\)/);
      const workers = childPids(p.pid).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('serve'));
      expect(workers).toHaveLength(2);
      for (const pid of workers) {
        const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
        expect(environ).toContain(`FLEETPLANE_DB_POOL_SIZE=${EMBEDDED_POOL_SIZE}`);
        expect(environ.some((e) => e.startsWith('DATABASE_URL=postgres://'))).toBe(true);
      }
    } finally {
      // SIGTERM: the primary stops its workers, then its PostgreSQL.
      await p.stop('SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('workers\' private listeners', () => {
  it('are on loopback with a secret of the run, unless Redis spans machines or the operator set --private-port', () => {
    const env = privateListenerEnv({ redisUrl: undefined, privatePort: undefined, privateSecret: undefined });
    expect(env).toMatchObject({ FLEETPLANE_PRIVATE_PORT: '0', FLEETPLANE_PRIVATE_HOST: '127.0.0.1' });
    expect(env['FLEETPLANE_PRIVATE_SECRET']?.length).toBeGreaterThanOrEqual(32);
    expect(privateListenerEnv({ redisUrl: undefined, privatePort: undefined, privateSecret: undefined })['FLEETPLANE_PRIVATE_SECRET']).not.toBe(env['FLEETPLANE_PRIVATE_SECRET']);
    expect(privateListenerEnv({ redisUrl: undefined, privatePort: undefined, privateSecret: 'given' })).not.toHaveProperty('FLEETPLANE_PRIVATE_SECRET');
    expect(privateListenerEnv({ redisUrl: 'redis://127.0.0.1:6379', privatePort: undefined, privateSecret: undefined })).toEqual({});
    expect(privateListenerEnv({ redisUrl: undefined, privatePort: 7001, privateSecret: 's' })).toEqual({});
  });
});

describe('workers\' V8 flags', () => {
  it('size the young generation, unless the primary was given its own size (argv or NODE_OPTIONS)', () => {
    expect(workerExecArgv(['--expose-gc'], undefined)).toEqual([
      '--expose-gc',
      `--min-semi-space-size=${WORKER_SEMI_SPACE_MB}`,
      `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`,
    ]);
    expect(workerExecArgv(['--max-semi-space-size=32'], undefined)).toEqual(['--max-semi-space-size=32']);
    expect(workerExecArgv(['--min-semi-space-size=8'], undefined)).toEqual(['--min-semi-space-size=8']);
    expect(workerExecArgv([], '--enable-source-maps --max_semi_space_size=8')).toEqual([]);
  });
});

describe('workers\' database settings', () => {
  it('workers on the embedded PostgreSQL get its URL and its pool size, unless the operator chose one', () => {
    expect(embeddedWorkerEnv({ dbPoolSize: undefined }, 'postgres://u@localhost/db?host=/tmp/x')).toEqual({
      DATABASE_URL: 'postgres://u@localhost/db?host=/tmp/x',
      FLEETPLANE_DB_POOL_SIZE: String(EMBEDDED_POOL_SIZE),
    });
    expect(embeddedWorkerEnv({ dbPoolSize: 7 }, 'postgres://u@localhost/db?host=/tmp/x')).toEqual({ DATABASE_URL: 'postgres://u@localhost/db?host=/tmp/x' });
    expect(embeddedWorkerEnv({ dbPoolSize: undefined }, undefined)).toEqual({});
  });
});
