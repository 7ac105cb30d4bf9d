import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../src/server/index.js';
import { MIGRATIONS, migrate, pgliteTemplate } from '../../src/server/db/index.js';
import { KEPT_IDLE_MS } from '../../src/server/db/pglite-kept.js';
import { buildDist, ROOT } from '../support/fleetplane-process.js';
import { Harness } from './fixtures.js';

describe('--memory-template', () => {
  let dir: string;
  let file: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fp-template-'));
    file = join(dir, 'template.tar');
    // A table no migration makes: found only in a database that started from this dump.
    const dump = await pgliteTemplate(async (db) => {
      await migrate(db);
      await db.query('CREATE TABLE made_in_the_template (x integer)');
    });
    await writeFile(file, Buffer.from(await dump.arrayBuffer()));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts an in-memory server from the dump, with every migration, and each server with its own copy', async () => {
    const servers = await Promise.all([1, 2].map(() => startServer({ memory: true, memoryTemplate: file, logLevel: 'silent' }, { listen: false })));
    try {
      for (const s of servers) {
        const versions = await s.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
        expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((m) => m.version));
        const [marker] = await s.db.query<{ t: string | null }>("SELECT to_regclass('made_in_the_template')::text AS t");
        expect(marker?.t).toBe('made_in_the_template');
      }
      // Each server has a copy: an organization made on one is not on the other.
      const [a, b] = servers.map((s) => new Harness(s));
      const org = await a!.createOrg();
      expect((await b!.call('GET', `/api/organizations/${org.id}`, { token: b!.admin })).statusCode).toBe(404);
      expect((await a!.call('GET', `/api/organizations/${org.id}`, { token: a!.admin })).statusCode).toBe(200);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });

  it("keeps a closed server's database for the process's next server, emptied back to the dump", async () => {
    const first = await startServer({ memory: true, memoryTemplate: file, logLevel: 'silent' }, { listen: false });
    const a = new Harness(first);
    const org = await a.createOrg();
    await first.db.query("SELECT set_config('application_name', 'first', false)");
    const heard: string[] = [];
    await first.db.listen('fp_kept_test', { onMessage: (p) => heard.push(`first:${p}`), onConnect: () => undefined });
    const [before] = await first.db.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid');
    const db = first.db;
    await first.close();
    // A closed server's late query reaches nothing.
    await expect(db.query('SELECT 1')).rejects.toThrow(/closed/);

    const second = await startServer({ memory: true, memoryTemplate: file, logLevel: 'silent' }, { listen: false });
    try {
      const b = new Harness(second);
      // The same database: its transaction ids go on from the first server's (a new copy of the dump starts below them).
      const [after] = await second.db.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid');
      expect(BigInt(after?.xid ?? '0')).toBeGreaterThan(BigInt(before?.xid ?? '0'));
      // Emptied: no organization, no audit entry, the sequences restarted, the session's settings reset; the dump's own table and versions stay.
      expect((await b.call('GET', `/api/organizations/${org.id}`, { token: b.admin })).statusCode).toBe(404);
      const [counts] = await second.db.query<{ orgs: number; audit: number; versions: number }>(
        'SELECT (SELECT count(*)::int FROM orgs) AS orgs, (SELECT count(*)::int FROM audit_log) AS audit, (SELECT count(*)::int FROM schema_migrations) AS versions',
      );
      expect(counts).toEqual({ orgs: 0, audit: 0, versions: MIGRATIONS.length });
      const [marker] = await second.db.query<{ t: string | null }>("SELECT to_regclass('made_in_the_template')::text AS t");
      expect(marker?.t).toBe('made_in_the_template');
      const [name] = await second.db.query<{ name: string }>("SELECT current_setting('application_name') AS name");
      expect(name?.name).not.toBe('first');
      await b.createOrg();
      const [ids] = await second.db.query<{ min: string }>('SELECT min(id)::text AS min FROM audit_log');
      expect(ids?.min).toBe('1');
      // Its LISTENs were ended with the first server: only the second's listener hears.
      let secondHears = (): void => undefined;
      const secondHeard = new Promise<void>((resolve) => (secondHears = resolve));
      await second.db.listen('fp_kept_test', {
        onMessage: (p) => {
          heard.push(`second:${p}`);
          secondHears();
        },
        onConnect: () => undefined,
      });
      await second.db.query("SELECT pg_notify('fp_kept_test', 'x')");
      await secondHeard;
      expect(heard).toEqual(['second:x']);
    } finally {
      await second.close();
    }
  });

  it('lets a program whose last server closed end: a database nobody takes is closed after KEPT_IDLE_MS', async () => {
    await buildDist();
    // What an embedding program does: start a server from the dump, close it, and return from main.
    const program = `
      const { startServer } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'server', 'index.js')).href)});
      const s = await startServer({ memory: true, memoryTemplate: ${JSON.stringify(file)}, logLevel: 'silent' }, { listen: false });
      await s.close();
      console.log('closed');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const ended = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Generous: the program must end by itself; without the expiry it never does.
    const timer = setTimeout(() => child.kill('SIGKILL'), KEPT_IDLE_MS + 20_000);
    const code = await ended;
    clearTimeout(timer);
    expect(out.trim()).toBe('closed');
    expect(code).toBe(0);
  }, 60_000);

  it('fails to start, naming the file, when the dump cannot be read', async () => {
    await expect(startServer({ memory: true, memoryTemplate: join(dir, 'missing.tar'), logLevel: 'silent' }, { listen: false })).rejects.toThrow(/missing\.tar/);
  });
});
