import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, openPglite, openPostgres, type Database, type Queryable } from '../../src/server/db/index.js';
import { clearPresence, writeStatusBatch } from '../../src/server/store/device-status.js';
import { convergence } from '../../src/server/store/convergence.js';
import { ConvergenceView } from '../../src/server/store/convergence-view.js';
import { compact } from '../../src/server/store/compaction.js';
import { backends, pgAdminUrl } from '../server/fixtures.js';
import { createDatabase } from '../support/postgres-server.js';

// Stale settings the views are checked under: everything not connected is stale at 0; at 3,600 s only
// the devices never seen and those aged by the `age` step are.
const STALE_SETTINGS = [0, 3_600];

type Step =
  | { op: 'create' }
  | { op: 'rename'; pick: number }
  | { op: 'delete'; pick: number }
  | { op: 'other-write' }
  | { op: 'batch'; replica: number; statuses: { pick: number; applied: 'head' | 'behind' | 'none'; error: boolean; put: boolean; online: boolean }[]; connect: number[]; disconnect: number[] }
  | { op: 'clear-presence'; replica: number }
  | { op: 'lease'; replica: number; live: boolean }
  | { op: 'collect'; replica: number }
  | { op: 'compact' }
  | { op: 'age'; pick: number }
  | { op: 'read' };

const pick = fc.nat(1_000);
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ op: 'create' as const }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('rename' as const), pick }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), pick }), weight: 2 },
  { arbitrary: fc.constant({ op: 'other-write' as const }), weight: 2 },
  {
    arbitrary: fc.record({
      op: fc.constant('batch' as const),
      replica: fc.nat(1),
      statuses: fc.array(
        fc.record({ pick, applied: fc.constantFrom('head' as const, 'behind' as const, 'none' as const), error: fc.boolean(), put: fc.boolean(), online: fc.boolean() }),
        { maxLength: 4 },
      ),
      connect: fc.array(pick, { maxLength: 3 }),
      disconnect: fc.array(pick, { maxLength: 2 }),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant('clear-presence' as const), replica: fc.nat(1) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('lease' as const), replica: fc.nat(1), live: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('collect' as const), replica: fc.nat(1) }), weight: 1 },
  { arbitrary: fc.constant({ op: 'compact' as const }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('age' as const), pick }), weight: 1 },
  { arbitrary: fc.constant({ op: 'read' as const }), weight: 4 },
);

/** Writes as the store does: each change bumps the organization's head and stamps its object with it. */
async function bump(db: Queryable, org: string): Promise<number> {
  const rows = await db.query<{ head_revision: unknown }>('UPDATE orgs SET head_revision = head_revision + 1 WHERE id = $1 RETURNING head_revision', [org]);
  return Number(rows[0]?.head_revision);
}

async function register(db: Queryable, replica: string): Promise<void> {
  await db.query(
    `INSERT INTO replicas (id, lease_expires_at) VALUES ($1, now() + interval '1 hour')
     ON CONFLICT (id) DO UPDATE SET lease_expires_at = EXCLUDED.lease_expires_at`,
    [replica],
  );
}

/** Each view's answer next to the database's, read in one transaction so both see the same clock. */
async function check(db: Database, org: string, views: readonly ConvergenceView[]): Promise<void> {
  await db.transaction(async (tx) => {
    for (const [i, view] of views.entries()) {
      const kept = await view.read(tx);
      expect(kept).toEqual(await convergence(tx, org, STALE_SETTINGS[i]!));
    }
  });
}

describe.each(backends())('a convergence view kept by deltas ($name)', ({ name, available }) => {
  let db: Database;
  beforeAll(async () => {
    if (!available) return;
    // The suite's dump of a migrated empty database (test/support/global-setup.ts) skips initdb; migrate
    // then finds nothing to do, and still migrates a database made without it.
    const template = process.env['FLEETPLANE_MEMORY_TEMPLATE'];
    db =
      name === 'pglite'
        ? await openPglite(undefined, template ? new Blob([await readFile(template)]) : undefined)
        : await openPostgres(await createDatabase(pgAdminUrl()));
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function newOrg(): Promise<string> {
    const org = randomUUID();
    await db.query('INSERT INTO orgs (id) VALUES ($1)', [org]);
    return org;
  }

  async function createDevice(org: string, n: number): Promise<string> {
    const id = randomUUID();
    const rev = await bump(db, org);
    await db.query(`INSERT INTO objects (id, org_id, kind, revision, value) VALUES ($1, $2, 'device', $3, $4::text::jsonb)`, [
      id,
      org,
      rev,
      JSON.stringify({ hostname: `host-${n}` }),
    ]);
    return id;
  }

  it.runIf(available)('answers as the database counts, whatever was written between two reads', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const org = await newOrg();
        const replicas = [randomUUID(), randomUUID()];
        for (const r of replicas) await register(db, r);
        const views = STALE_SETTINGS.map((stale) => new ConvergenceView(org, stale));
        const devices: string[] = [];
        const at = (n: number): string | undefined => devices[n % Math.max(1, devices.length)];
        let created = 0;
        await check(db, org, views);
        for (const s of steps) {
          const head = Number((await db.query<{ h: unknown }>('SELECT head_revision AS h FROM orgs WHERE id = $1', [org]))[0]?.h);
          switch (s.op) {
            case 'create':
              devices.push(await createDevice(org, created++));
              break;
            case 'rename': {
              const id = at(s.pick);
              if (!id) break;
              const rev = await bump(db, org);
              await db.query(`UPDATE objects SET revision = $2, value = jsonb_set(value, '{hostname}', to_jsonb($3::text)) WHERE id = $1`, [id, rev, `renamed-${rev}`]);
              break;
            }
            case 'delete': {
              const id = at(s.pick);
              if (!id) break;
              devices.splice(devices.indexOf(id), 1);
              const rev = await bump(db, org);
              await db.query(`UPDATE objects SET revision = $2, deleted = true, changed_at = now() - interval '1 second' WHERE id = $1`, [id, rev]);
              await db.query('DELETE FROM device_status WHERE device_id = $1', [id]);
              await db.query('DELETE FROM device_presence WHERE device_id = $1', [id]);
              break;
            }
            case 'other-write': {
              const rev = await bump(db, org);
              await db.query(`INSERT INTO objects (id, org_id, kind, revision, value) VALUES ($1, $2, 'security_group', $3, '{}')`, [randomUUID(), org, rev]);
              break;
            }
            case 'batch': {
              const statuses = s.statuses.flatMap((w) => {
                const id = at(w.pick);
                if (!id) return [];
                const applied = w.applied === 'head' ? head : w.applied === 'behind' ? head - 1 : null;
                const input = { applied_revision: applied, apply_error: w.error ? 'nft: failed' : null, local_endpoints: [], os: 'linux', agent_version: 'test', online: w.online };
                return [{ deviceId: id, orgId: org, via: w.put ? ('put' as const) : ('tunnel' as const), input }];
              });
              const ids = (picks: number[]): string[] => [...new Set(picks.flatMap((p) => at(p) ?? []))];
              await writeStatusBatch(db, { replicaId: replicas[s.replica]!, statuses: [...new Map(statuses.map((x) => [x.deviceId, x])).values()], connected: ids(s.connect), disconnected: ids(s.disconnect) });
              break;
            }
            case 'clear-presence':
              await clearPresence(db, replicas[s.replica]!);
              break;
            case 'lease':
              await db.query(`UPDATE replicas SET lease_expires_at = now() + (CASE WHEN $2 THEN interval '1 hour' ELSE interval '-1 second' END) WHERE id = $1`, [replicas[s.replica], s.live]);
              break;
            case 'collect':
              // The lease registry deletes an expired replica (its presence goes with it); it registers again later.
              await db.query('DELETE FROM replicas WHERE id = $1', [replicas[s.replica]]);
              await register(db, replicas[s.replica]!);
              break;
            case 'compact':
              await compact(db, 0);
              break;
            case 'age': {
              const id = at(s.pick);
              // As if two hours had passed for this device: a writer of device_status stamps its transaction id.
              if (id) await db.query(`UPDATE device_status SET last_seen = last_seen - interval '2 hours', xid = pg_current_xact_id() WHERE device_id = $1`, [id]);
              break;
            }
            case 'read':
              await check(db, org, views);
              break;
          }
        }
        await check(db, org, views);
        await db.query('DELETE FROM replicas WHERE id = ANY($1::text[])', [replicas]);
      }),
      { numRuns: 100 },
    );
  }, 120_000);

  it.runIf(available)('a read fetches only the statuses written, and the presence of replicas whose presence changed, since the last', async () => {
    const org = await newOrg();
    const [a, b] = [randomUUID(), randomUUID()];
    await register(db, a);
    await register(db, b);
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await createDevice(org, i));
    const head = await bump(db, org);
    const status = (id: string) => ({ deviceId: id, orgId: org, via: 'tunnel' as const, input: { applied_revision: head, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'test' } });
    await writeStatusBatch(db, { replicaId: a, statuses: ids.map(status), connected: ids, disconnected: [] });

    const view = new ConvergenceView(org, 90);
    expect((await view.read(db)).at_head).toBe(50);
    expect(view.lastRead).toEqual({ devices: 50, statuses: 50, presenceReplicas: 2, counted: false });

    await writeStatusBatch(db, { replicaId: a, statuses: ids.slice(0, 3).map(status), connected: [], disconnected: [] });
    await view.read(db);
    expect(view.lastRead).toEqual({ devices: 0, statuses: 3, presenceReplicas: 0, counted: false });

    await writeStatusBatch(db, { replicaId: b, statuses: [], connected: ids.slice(0, 2), disconnected: [] });
    await createDevice(org, 50);
    const c = await view.read(db);
    expect(view.lastRead).toEqual({ devices: 1, statuses: 0, presenceReplicas: 1, counted: false });
    expect(c).toMatchObject({ devices: 51, at_head: 0, behind: 50, stale: 1, online: 50 });

    await view.read(db);
    expect(view.lastRead).toEqual({ devices: 0, statuses: 0, presenceReplicas: 0, counted: false });
  });

  it.runIf(available && name === 'postgres')('a transaction left open elsewhere does not widen the reads', async () => {
    const org = await newOrg();
    const ids = [await createDevice(org, 0), await createDevice(org, 1), await createDevice(org, 2)];
    const status = (id: string, rev: number) => ({ deviceId: id, orgId: org, via: 'tunnel' as const, input: { applied_revision: rev, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'test' } });
    let started!: () => void;
    let release!: () => void;
    const begun = new Promise<void>((r) => (started = r));
    const held = new Promise<void>((r) => (release = r));
    // An open transaction with an id holds every later snapshot's xmin at or below it.
    const open = db.transaction(async (tx) => {
      await tx.query('SELECT pg_current_xact_id()');
      started();
      await held;
    });
    try {
      await begun;
      const view = new ConvergenceView(org, 90);
      await view.read(db);
      for (const [i, n] of [3, 1, 2].entries()) {
        await writeStatusBatch(db, { replicaId: 'none', statuses: ids.slice(0, n).map((id) => status(id, i)), connected: [], disconnected: [] });
        await view.read(db);
        expect(view.lastRead.statuses).toBe(n);
      }
    } finally {
      release();
      await open;
    }
  });

  it.runIf(available)('a replica whose lease lapses, or that is collected, holds no device from the next read on', async () => {
    const org = await newOrg();
    const [a, b] = [randomUUID(), randomUUID()];
    await register(db, a);
    await register(db, b);
    const ids = [await createDevice(org, 0), await createDevice(org, 1)];
    await writeStatusBatch(db, { replicaId: b, statuses: [], connected: ids, disconnected: [] });
    const view = new ConvergenceView(org, 3_600);
    const online = async (): Promise<number> => {
      let kept = -1;
      await db.transaction(async (tx) => {
        const c = await view.read(tx);
        expect(c).toEqual(await convergence(tx, org, 3_600));
        kept = c.online;
      });
      return kept;
    };
    expect(await online()).toBe(2);
    // Another replica's presence moves meanwhile in none of these steps: only b's lease and row do.
    await db.query(`UPDATE replicas SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [b]);
    expect(await online()).toBe(0);
    await db.query(`UPDATE replicas SET lease_expires_at = now() + interval '1 hour' WHERE id = $1`, [b]);
    expect(await online()).toBe(2);
    await db.query('DELETE FROM replicas WHERE id = $1', [b]);
    expect(await online()).toBe(0);
    await db.query('DELETE FROM replicas WHERE id = $1', [a]);
  });

  it.runIf(available)('a device deleted and compacted away between two reads is gone from the next', async () => {
    const org = await newOrg();
    const [kept, deleted] = [await createDevice(org, 0), await createDevice(org, 1)];
    const view = new ConvergenceView(org, 90);
    expect((await view.read(db)).devices).toBe(2);
    const rev = await bump(db, org);
    await db.query(`UPDATE objects SET revision = $2, deleted = true, changed_at = now() - interval '1 second' WHERE id = $1`, [deleted, rev]);
    await compact(db, 0);
    const c = await view.read(db);
    expect(c.devices).toBe(1);
    expect(c.not_converged.map((d) => d.id)).toEqual([kept]);
  });

  it.runIf(available)('an organization beyond the view limit is counted by the database', async () => {
    const org = await newOrg();
    for (let i = 0; i < 4; i++) await createDevice(org, i);
    const view = new ConvergenceView(org, 90, 3);
    await db.transaction(async (tx) => {
      expect(await view.read(tx)).toEqual(await convergence(tx, org, 90));
    });
    expect(view.lastRead.counted).toBe(true);
  });

  it.runIf(available)('a read of a deleted organization is not_found', async () => {
    const org = await newOrg();
    const view = new ConvergenceView(org, 90);
    await view.read(db);
    await db.query('UPDATE orgs SET deleted_at = now() WHERE id = $1', [org]);
    await expect(view.read(db)).rejects.toMatchObject({ code: 'not_found' });
  });
});
