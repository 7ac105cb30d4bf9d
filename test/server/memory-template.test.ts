import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../src/server/index.js';
import { MIGRATIONS, migrate, pgliteTemplate } from '../../src/server/db/index.js';
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

  it('fails to start, naming the file, when the dump cannot be read', async () => {
    await expect(startServer({ memory: true, memoryTemplate: join(dir, 'missing.tar'), logLevel: 'silent' }, { listen: false })).rejects.toThrow(/missing\.tar/);
  });
});
