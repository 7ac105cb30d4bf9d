import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { onCleanup } from '../children.js';

/**
 * A throwaway PostgreSQL cluster for benchmarks, started the way
 * test/support/postgres-server.ts does it (NOTES.md: as the `postgres` user,
 * on a temporary directory, loopback only). Durability is off (fsync,
 * synchronous_commit): the figures are the server's, not the disk's; the
 * settings are recorded with the results.
 */
export const PG_BIN = process.env['FLEETPLANE_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

export const PG_SERVER_SETTINGS = ['max_connections=400', 'fsync=off', 'synchronous_commit=off', 'full_page_writes=off'] as const;

export function hasPostgres(): boolean {
  return existsSync(`${PG_BIN}/initdb`) && existsSync(`${PG_BIN}/pg_ctl`);
}

export interface BenchPostgres {
  adminUrl: string;
  /** PID of the postmaster (its backends are its children), for CPU accounting. */
  pid(): number | undefined;
  /** Creates a fresh database and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  stop(): void;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function asPostgres(cmd: string): void {
  const isRoot = process.getuid?.() === 0;
  const res = isRoot
    ? spawnSync('su', ['postgres', '-s', '/bin/bash', '-c', cmd], { encoding: 'utf8' })
    : spawnSync('bash', ['-c', cmd], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`postgres command failed: ${cmd}\n${res.stdout}\n${res.stderr}`);
}

let counter = 0;

export async function startPostgres(): Promise<BenchPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetplane-bench-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  const data = join(dir, 'data');
  let started = false;
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    unregister();
    try {
      if (started) asPostgres(`${PG_BIN}/pg_ctl -D ${data} -m immediate -w stop >/dev/null`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const unregister = onCleanup(stop);
  try {
    asPostgres(`${PG_BIN}/initdb -D ${data} -U postgres --auth=trust -E UTF8 >/dev/null`);
    const opts = PG_SERVER_SETTINGS.map((s) => `-c ${s}`).join(' ');
    asPostgres(`${PG_BIN}/pg_ctl -D ${data} -l ${dir}/log -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 ${opts}" -w start >/dev/null`);
    started = true;
  } catch (err) {
    stop();
    throw err;
  }
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    adminUrl,
    pid() {
      try {
        return Number(readFileSync(join(data, 'postmaster.pid'), 'latin1').split('\n')[0]);
      } catch {
        return undefined;
      }
    },
    async createDatabase(prefix = 'bench') {
      const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter++}`;
      const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await sql.end();
      }
      return adminUrl.replace(/\/postgres$/, `/${name}`);
    },
    stop,
  };
}
