import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import postgres from 'postgres';
import { PG_BIN } from './binaries.js';

/** A throwaway PostgreSQL cluster on loopback, in a temporary directory. */
export interface PostgresServer {
  port: number;
  /** Its unix socket (reachable from any network namespace). */
  socketPath: string;
  /** URL of the `postgres` maintenance database. */
  adminUrl: string;
  stop(): void;
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function asPostgres(cmd: string): void {
  // PostgreSQL refuses to run as root; NOTES.md: run it as the postgres user.
  const isRoot = process.getuid?.() === 0;
  const res = isRoot
    ? spawnSync('su', ['postgres', '-s', '/bin/bash', '-c', cmd], { encoding: 'utf8' })
    : spawnSync('bash', ['-c', cmd], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`postgres command failed: ${cmd}\n${res.stdout}\n${res.stderr}`);
}

export async function startPostgres(): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetplane-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  const data = join(dir, 'data');
  asPostgres(`${PG_BIN}/initdb -D ${data} -U postgres --auth=trust -E UTF8 >/dev/null`);
  asPostgres(
    `${PG_BIN}/pg_ctl -D ${data} -l ${dir}/log -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" -w start >/dev/null`,
  );
  let stopped = false;
  return {
    port,
    socketPath: join(dir, `.s.PGSQL.${port}`),
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        asPostgres(`${PG_BIN}/pg_ctl -D ${data} -m immediate -w stop >/dev/null`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

let counter = 0;

/** Creates a fresh database on the cluster and returns its URL. */
export async function createDatabase(adminUrl: string, prefix = 'fp'): Promise<string> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await sql.end();
  }
  return adminUrl.replace(/\/postgres$/, `/${name}`);
}
