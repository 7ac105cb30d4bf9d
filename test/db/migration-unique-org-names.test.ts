/**
 * Migration 19 (issue 37, v1.16): organization names are unique again, and
 * the duplicates stored while they were not (v1.4 to v1.15) are renamed
 * before the unique index is built, on PGlite and PostgreSQL alike.
 */
import { describe, expect, inject, it } from 'vitest';
import { migrate, MIGRATIONS, openPglite, openPostgres, type Database } from '../../src/server/db/index.js';
import { createDatabase } from '../support/postgres-server.js';

const id = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

async function insertOrg(db: Database, n: number, name: string, createdAt: string, deleted = false): Promise<void> {
  await db.query('INSERT INTO orgs (id, head_revision, deleted_at) VALUES ($1, 3, $2)', [id(n), deleted ? createdAt : null]);
  const value = { id: id(n), name, created_at: createdAt, updated_at: createdAt, revision: 3 };
  await db.query(`INSERT INTO objects (id, org_id, kind, revision, deleted, value) VALUES ($1, $1, 'organization', 3, $2, $3::text::jsonb)`, [id(n), deleted, JSON.stringify(value)]);
}

async function renamesDuplicates(db: Database): Promise<void> {
  await migrate(db, MIGRATIONS.filter((m) => m.version < 19));
  // acme thrice: 1 and 3 are as old, 1 has the smaller id and keeps it; acme-2 is taken already.
  await insertOrg(db, 1, 'acme', '2024-01-01T00:00:00.000Z');
  await insertOrg(db, 2, 'acme', '2024-01-02T00:00:00.000Z');
  await insertOrg(db, 3, 'acme', '2024-01-01T00:00:00.000Z');
  await insertOrg(db, 4, 'acme-2', '2023-01-01T00:00:00.000Z');
  // A deleted organization's name is not taken: the live beta keeps it.
  await insertOrg(db, 5, 'beta', '2023-01-01T00:00:00.000Z', true);
  await insertOrg(db, 6, 'beta', '2024-01-01T00:00:00.000Z');
  // Exact match: another case is another name.
  await insertOrg(db, 7, 'Acme', '2022-01-01T00:00:00.000Z');

  expect(await migrate(db)).toEqual(MIGRATIONS.filter((m) => m.version >= 19).map((m) => m.version));

  // Fields read in SQL: one driver parses jsonb, the other gives text.
  const rows = await db.query<{ id: string; revision: number; prev_revision: number | null; name: string; value_revision: number }>(
    `SELECT id, revision, prev_revision, value->>'name' AS name, (value->>'revision')::int AS value_revision
       FROM objects WHERE kind = 'organization' ORDER BY id`,
  );
  expect(rows.map((r) => [r.id, r.name])).toEqual([
    [id(1), 'acme'],
    [id(2), 'acme-4'],
    [id(3), 'acme-3'],
    [id(4), 'acme-2'],
    [id(5), 'beta'],
    [id(6), 'beta'],
    [id(7), 'Acme'],
  ]);
  // A rename is a revision of its organization, so its watchers see it; the others are untouched.
  const renamed = rows.filter((r) => r.id === id(2) || r.id === id(3));
  expect(renamed.map((r) => [Number(r.revision), Number(r.prev_revision), Number(r.value_revision)])).toEqual([
    [4, 3, 4],
    [4, 3, 4],
  ]);
  expect(rows.filter((r) => r.id === id(1)).map((r) => Number(r.revision))).toEqual([3]);
  const heads = await db.query<{ id: string; head_revision: number }>('SELECT id, head_revision FROM orgs WHERE id = ANY($1::uuid[]) ORDER BY id', [[id(1), id(2), id(3)]]);
  expect(heads.map((r) => Number(r.head_revision))).toEqual([3, 4, 4]);
  const audit = await db.query<{ object_id: string; actor_type: string; previous_name: string }>(
    `SELECT object_id, actor_type, details->>'previous_name' AS previous_name FROM audit_log WHERE kind = 'organization' ORDER BY object_id`,
  );
  expect(audit.map((a) => [a.object_id, a.actor_type, a.previous_name])).toEqual([
    [id(2), 'system', 'acme'],
    [id(3), 'system', 'acme'],
  ]);

  // The index holds from now on.
  await expect(insertOrg(db, 8, 'acme-3', '2025-01-01T00:00:00.000Z')).rejects.toMatchObject({ code: '23505' });
  await db.close();
}

describe('migration 19 (unique organization names)', () => {
  it('renames every duplicate but the oldest to <name>-<n>, the smallest free n >= 2, on PGlite', async () => {
    await renamesDuplicates(await openPglite(undefined));
  });

  it.runIf(inject('pgAdminUrl') !== '')('renames every duplicate but the oldest to <name>-<n>, the smallest free n >= 2, on PostgreSQL', async () => {
    await renamesDuplicates(await openPostgres(await createDatabase(inject('pgAdminUrl')), { max: 2 }));
  });
});
