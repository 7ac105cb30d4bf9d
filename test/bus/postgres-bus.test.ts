import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BUS, decodeBusMessage } from '../../src/protocol/index.js';
import { createBus, PostgresBus, type ReliabilityOptions } from '../../src/server/bus/index.js';
import { makeSettings } from '../../src/server/config/settings.js';
import { migrate, openPglite, openPostgres, type Database } from '../../src/server/db/index.js';
import { createDatabase } from '../support/postgres-server.js';
import {
  eventually,
  lostNumbers,
  reliableDeliveryTests,
  settle,
  silentLogger,
  testOptions,
  uniqueName,
  warmUp,
  WakeRecorder,
  type BusPair,
  type StatsBus,
} from './bus-harness.js';

const adminUrl = inject('pgAdminUrl');

/** Two replicas: separate Database objects (pools and LISTEN sessions) on one database. */
async function pgPair(aOptions: Partial<ReliabilityOptions>, bOptions: Partial<ReliabilityOptions>) {
  const url = await createDatabase(adminUrl, 'bus');
  const dbA = await openPostgres(`${url}?application_name=fp_bus_a`, { max: 3 });
  const dbB = await openPostgres(`${url}?application_name=fp_bus_b`, { max: 3 });
  const a = await PostgresBus.open(dbA, testOptions(aOptions));
  const b = await PostgresBus.open(dbB, testOptions(bOptions));
  const dbs = new Map<StatsBus, Database>([
    [a, dbA],
    [b, dbB],
  ]);
  const pair: BusPair & { dbA: Database; dbB: Database } = {
    a,
    b,
    dbA,
    dbB,
    // As the store does: the NOTIFY is the transaction's last statement.
    send: async (from, name) => {
      const db = dbs.get(from)!;
      const bus = from as PostgresBus;
      await db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        expect(await bus.notifyInTransaction(tx, name)).toBe(true);
      });
    },
    close: async () => {
      await Promise.all([a.close(), b.close()]);
      await Promise.all([dbA.close(), dbB.close()]);
    },
  };
  return pair;
}

/** Every payload on the bus channel, seen by a listener outside the buses. */
async function tap(db: Database): Promise<{ names: string[]; close(): Promise<void> }> {
  const names: string[] = [];
  const l = await db.listen(BUS.pgChannel, {
    onMessage: (p) => {
      const m = decodeBusMessage(p);
      if (m?.type === 'signal') names.push(m.name);
    },
    onConnect: () => {},
  });
  return { names, close: () => l.close() };
}

describe.runIf(adminUrl !== '')('PostgresBus on PostgreSQL', () => {
  reliableDeliveryTests(it, pgPair);

  it('delivers a transaction’s signal only if it commits', async () => {
    const pair = await pgPair({}, {});
    const seen = await tap(pair.dbB);
    try {
      await warmUp(pair);
      const [rolled, committed] = [uniqueName('rolled-back'), uniqueName('committed')];
      const atB = new WakeRecorder(pair.b).watch(committed);
      await expect(
        pair.dbA.transaction(async (tx) => {
          await (pair.a as PostgresBus).notifyInTransaction(tx, rolled);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await pair.send(pair.a, committed);
      await eventually('the committed signal arrives', () => atB.count(committed) >= 1);
      expect(seen.names).toContain(committed);
      expect(seen.names).not.toContain(rolled);
      // The rolled-back message used a number: a (spurious) gap, by design.
      await eventually('the rollback gap is resynced', () => pair.b.stats.resyncs.gap >= 1);
      expect(lostNumbers(pair.b.stats)).toBe(1);
    } finally {
      await seen.close();
      await pair.close();
    }
  });

  it('gives back the number of a NOTIFY that failed, so no gap follows', async () => {
    const pair = await pgPair({}, {});
    try {
      await warmUp(pair);
      const bus = pair.a as PostgresBus;
      await expect(
        pair.dbA.transaction(async (tx) => {
          await tx.query('SELECT 1/0').catch(() => undefined);
          await bus.notifyInTransaction(tx, uniqueName('failed'));
        }),
      ).rejects.toThrow();
      const next = uniqueName('after-failure');
      const atB = new WakeRecorder(pair.b).watch(next);
      await pair.send(pair.a, next);
      await eventually('next signal arrives', () => atB.count(next) >= 1);
      await new Promise((r) => setTimeout(r, 150));
      expect(pair.b.stats.gaps).toBe(0);
    } finally {
      await pair.close();
    }
  });

  it('sends one message per name per transaction', async () => {
    const pair = await pgPair({}, {});
    try {
      await warmUp(pair);
      const [x, y] = [uniqueName('tx-x'), uniqueName('tx-y')];
      const atB = new WakeRecorder(pair.b).watch(x, y);
      const before = pair.a.stats.signalsSent;
      await pair.dbA.transaction(async (tx) => {
        for (let i = 0; i < 5; i++) {
          await (pair.a as PostgresBus).notifyInTransaction(tx, x);
          await (pair.a as PostgresBus).notifyInTransaction(tx, y);
        }
      });
      await eventually('both woken', () => atB.count(x) >= 1 && atB.count(y) >= 1);
      expect(pair.a.stats.signalsSent - before).toBe(2);
    } finally {
      await pair.close();
    }
  });

  it('recovers when the LISTEN connection is terminated: wakes all, then delivers again', async () => {
    const pair = await pgPair({}, {});
    try {
      await warmUp(pair);
      const [idle, later] = [uniqueName('idle'), uniqueName('later')];
      const atB = new WakeRecorder(pair.b).watch(idle, later);
      const killed = await pair.dbA.query<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'fp_bus_b' AND query ILIKE 'listen%'`,
      );
      expect(killed).toEqual([{ ok: true }]);
      // At least once: under load the self-check may restart the listener too.
      await eventually('the listener reconnected', () => pair.b.stats.reconnects >= 1);
      expect(pair.b.stats.resyncs.reconnect).toBe(pair.b.stats.reconnects);
      await eventually('every subscription woken', () => atB.count(idle) >= 1);
      await pair.send(pair.a, later);
      await eventually('later notifications arrive', () => atB.count(later) >= 1);
      expect(pair.a.stats.reconnects).toBe(0);
    } finally {
      await pair.close();
    }
  });

  it('recovers when the database refuses the listener’s reconnection for a while', async () => {
    const pair = await pgPair({}, {});
    const admin = await openPostgres(adminUrl, { max: 1 });
    const dbName = (await pair.dbA.query<{ name: string }>('SELECT current_database() AS name'))[0]!.name;
    try {
      await warmUp(pair);
      const [idle, later] = [uniqueName('idle'), uniqueName('later')];
      const atB = new WakeRecorder(pair.b).watch(idle, later);
      await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'fp_bus_b' AND query ILIKE 'listen%'`,
        [dbName],
      );
      // B's pool still works, so its hellos are confirmed but never heard back.
      await eventually('the self-check notices the deaf listener', () => pair.b.stats.deafRestarts >= 1);
      await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);
      await eventually('every subscription woken after recovery', () => pair.b.stats.resyncs.reconnect >= 1 && atB.count(idle) >= 1);
      await eventually('later notifications arrive', async () => {
        await pair.send(pair.a, later);
        return atB.count(later) >= 1;
      });
    } finally {
      await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);
      await admin.close();
      await pair.close();
    }
  });

  it('createBus builds a listening PostgreSQL bus from the settings', async () => {
    const url = await createDatabase(adminUrl, 'bus');
    const db = await openPostgres(url, { max: 2 });
    const bus = await createBus(makeSettings({ databaseUrl: url, busHelloInterval: 0.1, busGapDelay: 0.05 }), db, silentLogger);
    try {
      expect(bus).toBeInstanceOf(PostgresBus);
      const name = uniqueName('factory');
      const rec = new WakeRecorder(bus).watch(name);
      bus.notify(name);
      await eventually('own signal heard', () => rec.count(name) === 1);
      expect(bus.stats?.signalsReceived).toBe(1);
    } finally {
      await bus.close();
      await db.close();
    }
  });
});

describe('PostgresBus on PGlite', () => {
  let db: Database;
  beforeAll(async () => {
    db = await openPglite(undefined);
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('delivers committed transactions’ signals to every bus in the process, not rolled-back ones', async () => {
    const a = await PostgresBus.open(db, testOptions());
    const b = await PostgresBus.open(db, testOptions());
    try {
      await eventually('warm', () => a.stats.publishers === 2 && b.stats.publishers === 2);
      await settle();
      const [committed, rolled, plain] = [uniqueName('lite-commit'), uniqueName('lite-rollback'), uniqueName('lite-plain')];
      const seen = await tap(db);
      const atB = new WakeRecorder(b).watch(committed, plain);
      await db.transaction(async (tx) => {
        await a.notifyInTransaction(tx, committed);
      });
      await db
        .transaction(async (tx) => {
          await a.notifyInTransaction(tx, rolled);
          throw new Error('roll back');
        })
        .catch(() => undefined);
      a.notify(plain);
      await eventually('both arrive', () => atB.count(committed) >= 1 && atB.count(plain) >= 1);
      expect(seen.names).toEqual([committed, plain]);
      await seen.close();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
