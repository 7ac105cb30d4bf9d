import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { migrate, openPostgres, type Database } from '../../src/server/db/index.js';
import { MemoryBus } from '../../src/server/bus/index.js';
import { Store } from '../../src/server/store/index.js';
import { insertObject } from '../../src/server/store/objects.js';
import { writeInOrg } from '../../src/server/store/org-write.js';
import { runAudited, SYSTEM_SCOPE } from '../../src/server/audit/index.js';
import { createDatabase } from '../support/postgres-server.js';
import { pgAdminUrl, prng, startTestServer, wgKey } from './fixtures.js';

/** These writes stand for the admin token's: every tag is theirs to give. */
const ALL_TAGS = { all: true } as const;

const WRITERS = 8;
const WRITES_EACH = 50;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A reader that does what watchers and pollers do: repeatedly read
 * `revision > last` and advance `last` to the highest revision seen.
 */
class Follower {
  last = 0;
  readonly seen = new Set<number>();
  private stopped = false;

  constructor(private readonly read: (after: number) => Promise<number[]>) {}

  async run(): Promise<void> {
    while (!this.stopped) await this.once();
    // One more read after every writer finished: anything still missing was skipped for good.
    await this.once();
  }

  stop(): void {
    this.stopped = true;
  }

  private async once(): Promise<void> {
    const revs = await this.read(this.last);
    for (const r of revs) {
      this.seen.add(r);
      if (r > this.last) this.last = r;
    }
    if (revs.length === 0) await sleep(0);
  }
}

/** Runs WRITERS concurrent writers of WRITES_EACH writes each while a follower reads; returns what was written and seen. */
async function race(
  write: (writer: number, i: number, follower: Follower) => Promise<number>,
  read: (after: number) => Promise<number[]>,
): Promise<{ written: number[]; seen: Set<number> }> {
  const follower = new Follower(read);
  const reading = follower.run();
  const written: number[] = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < WRITES_EACH; i++) written.push(await write(w, i, follower));
    }),
  );
  follower.stop();
  await reading;
  return { written, seen: follower.seen };
}

const missing = (written: number[], seen: Set<number>) => written.filter((r) => !seen.has(r));

describe.runIf(pgAdminUrl() !== '')('revisions become visible in order (PostgreSQL)', () => {
  it(`a follower of revision > last sees every change of ${WRITERS} concurrent writers`, () => runAudited(SYSTEM_SCOPE, async () => {
    const server = await startTestServer('postgres');
    try {
      const store = server.ctx.store;
      const org = await store.organizations.create({ name: 'race' });
      const rnd = prng(42);
      const { written, seen } = await race(
        async (w, i) => {
          if (w === 0 && i === 0) {
            // The slow transaction that breaks a sequence: it takes its revision, then stalls
            // before committing. Under the organization's lock the others queue behind it.
            return writeInOrg(server.db, store.bus, org.id, async (tx) => {
              const revision = await tx.revision();
              await insertObject(tx.tx, org.id, 'security-group', {
                id: randomUUID(),
                organization_id: org.id,
                description: 'slow',
                inbound_rules: [],
                outbound_rules: [],
                revision,
                created_at: new Date().toISOString(),
                updated_at: new Date().toISOString(),
              });
              await sleep(150);
              return revision;
            });
          }
          // Every write creates an object, so each revision stays visible as itself.
          if (rnd() < 0.5) return (await store.securityGroups.create(org.id, { description: `${w}/${i}` })).revision;
          return (await store.devices.create(org.id, { hostname: `${w}-${i}`, public_key: wgKey() }, undefined, 0, ALL_TAGS))
            .device.revision;
        },
        async (after) => (await store.changes.read(org.id, after, 1000)).rows.map((r) => r.revision),
      );
      expect(written).toHaveLength(WRITERS * WRITES_EACH);
      expect(new Set(written).size).toBe(written.length);
      expect(missing(written, seen)).toEqual([]);
      // Revisions are dense: 1 is the organization itself, then one per write.
      expect([...written].sort((a, b) => a - b)).toEqual(Array.from({ length: written.length }, (_, i) => i + 2));
    } finally {
      await server.close();
    }
  }));

  it('the same follower loses changes with a per-table sequence (the bug class the test must catch)', async () => {
    const db: Database = await openPostgres(await createDatabase(pgAdminUrl()), { max: WRITERS + 2 });
    try {
      await db.query('CREATE TABLE seq_changes (revision bigserial PRIMARY KEY, writer int NOT NULL, n int NOT NULL)');
      const rnd = prng(7);
      const { written, seen } = await race(
        (w, i, follower) =>
          db.transaction(async (tx) => {
            const rows = await tx.query<{ revision: number }>('INSERT INTO seq_changes (writer, n) VALUES ($1, $2) RETURNING revision', [w, i]);
            const revision = Number(rows[0]?.revision);
            if (w === 0 && i === 0) {
              // Hold the number until the follower has read past it: a later number committed first.
              for (let t = 0; t < 2000 && follower.last <= revision; t++) await sleep(2);
            } else if (rnd() < 0.3) {
              await sleep(rnd() * 3);
            }
            return revision;
          }),
        async (after) =>
          (await db.query<{ revision: number }>('SELECT revision FROM seq_changes WHERE revision > $1 ORDER BY revision LIMIT 1000', [after])).map(
            (r) => Number(r.revision),
          ),
      );
      const rows = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM seq_changes');
      // Every write committed, yet the follower never saw some of them.
      expect(Number(rows[0]?.n)).toBe(WRITERS * WRITES_EACH);
      expect(missing(written, seen).length).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
  });

  it('different organizations write in parallel and keep their own dense counters', () => runAudited(SYSTEM_SCOPE, async () => {
    const db = await openPostgres(await createDatabase(pgAdminUrl()), { max: 8 });
    try {
      await migrate(db);
      const store = new Store(db, new MemoryBus());
      const orgs = await Promise.all([0, 1, 2].map((i) => store.organizations.create({ name: `p${i}` })));
      const revs = await Promise.all(
        orgs.map(async (o) => {
          const out: number[] = [];
          await Promise.all(
            [0, 1, 2, 3].map(async () => {
              for (let i = 0; i < 10; i++) out.push((await store.securityGroups.create(o.id, {})).revision);
            }),
          );
          return out.sort((a, b) => a - b);
        }),
      );
      for (const r of revs) expect(r).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
    } finally {
      await db.close();
    }
  }));
});
