import { AsyncResource } from 'node:async_hooks';
import type { Database, Queryable } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import { orgSignal, type WatchKind } from '../../protocol/index.js';
import { lockObject, type StoredValue } from './objects.js';
import { ApiError, notFound } from '../errors.js';

/** A write transaction inside one organization. */
export interface OrgWrite {
  readonly tx: Queryable;
  readonly orgId: string;
  /**
   * Takes the organization's next revision. The first call locks the
   * organization's counter row until commit, so revisions of one organization
   * commit in order (ARCHITECTURE.md, "What each part keeps"). Later calls reuse that revision:
   * one write, one revision.
   */
  revision(): Promise<number>;
  /**
   * Hands over a statement already sent in `tx` whose answer the write
   * doesn't wait for. Statements sent without waiting in between share one
   * round trip (the driver pipelines them); the organization's signal goes
   * out behind them. The transaction (or the write's savepoint) waits for
   * every one of them before it commits, and fails with the first error.
   * When the write itself throws, their errors are only the rolled-back
   * transaction's echo: its own error is the one reported.
   */
  pipelined<T>(sent: Promise<T>): Promise<T>;
  /**
   * Reads one live object of the organization and locks its row until the
   * transaction ends; 404 when there is none. A write that declared the
   * object (writeInOrg's `touches`) may get it from one read of its whole
   * batch, taken before the batch's first write ran.
   */
  lock<T extends StoredValue>(kind: WatchKind, id: string): Promise<T>;
}

/** The objects a write changes, and the only ones: declared, they are read and locked for its whole batch in one query. */
export interface WriteOptions {
  touches?: readonly { readonly kind: WatchKind; readonly id: string }[];
}

/** Most writes one transaction of an organization carries. */
export const MAX_WRITES_PER_COMMIT = 256;
/** Writes of one organization waiting for the one in flight; past it a write is refused with 503 (retry). */
export const MAX_WAITING_WRITES = 4096;

interface Pending {
  fn: (w: OrgWrite) => Promise<unknown>;
  touches: WriteOptions['touches'];
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface OrgQueue {
  waiting: Pending[];
  running: boolean;
}

const queues = new WeakMap<Database, Map<string, OrgQueue>>();

/**
 * The OrgWrite of one write. `head`, when given, is the organization's head
 * revision as this transaction already holds it (an earlier write of the
 * same transaction took one and was kept, so the counter row is locked by
 * it): the revision is then that plus one, and the counter's update is
 * pipelined instead of waited for. `counterAtEnd`: the batch writes the
 * counter once, after its last write (runOptimistic), so a write takes
 * `head + 1` with no statement at all.
 */
function revisionTaker(
  tx: Queryable,
  orgId: string,
  head?: number,
  prefetched?: Map<string, StoredValue>,
  counterAtEnd = false,
): { write: OrgWrite; taken: () => number | undefined; answered: () => Promise<void> } {
  let taken: number | undefined;
  const sent: Promise<unknown>[] = [];
  const write: OrgWrite = {
    tx,
    orgId,
    pipelined(statement) {
      // Handled here so a write that throws before waiting leaves no unhandled rejection; `answered` reports it.
      statement.catch(() => undefined);
      sent.push(statement);
      return statement;
    },
    lock<T extends StoredValue>(kind: WatchKind, id: string): Promise<T> {
      const key = touchKey(kind, id);
      const value = prefetched?.get(key);
      if (prefetched === undefined || value === undefined) return lockObject<T>(tx, orgId, kind, id);
      // Once: the write changes it, and a later write of the batch must read what this one left.
      prefetched.delete(key);
      return Promise.resolve(value as T);
    },
    async revision() {
      if (taken !== undefined) return taken;
      if (head !== undefined && counterAtEnd) {
        taken = head + 1;
        return taken;
      }
      if (head !== undefined) {
        const next = head + 1;
        // A deleted organization (an earlier write of the batch deleted it) fails the write when the answers come.
        void write.pipelined(
          tx.query('UPDATE orgs SET head_revision = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id', [orgId, next]).then((rows) => {
            if (rows.length === 0) throw notFound('organization');
          }),
        );
        taken = next;
        return taken;
      }
      const rows = await tx.query<{ head_revision: number }>(
        'UPDATE orgs SET head_revision = head_revision + 1 WHERE id = $1 AND deleted_at IS NULL RETURNING head_revision',
        [orgId],
      );
      const row = rows[0];
      if (!row) throw notFound('organization');
      taken = Number(row.head_revision);
      return taken;
    },
  };
  return {
    write,
    taken: () => taken,
    answered: async () => {
      const outcomes = await Promise.allSettled(sent);
      for (const o of outcomes) if (o.status === 'rejected') throw o.reason;
    },
  };
}

/**
 * Runs `fn` in a transaction of organization `orgId` (404 if it doesn't exist
 * or is deleted). If `fn` took a revision, the organization's watchers are
 * signalled: inside the transaction when the bus supports it, else after commit.
 *
 * Writes of one organization that arrive while another is in flight commit
 * together: the revision row is locked until commit, so they would take
 * turns anyway, each paying a commit (an fsync) of its own; instead the next
 * transaction carries every waiting write (up to MAX_WRITES_PER_COMMIT), each
 * in a savepoint of its own, so one that fails is undone alone and the
 * others commit. Each still takes its own revision, in arrival order. A
 * batch runs first without savepoints and, when one of its writes fails,
 * again with them: `fn` may run more than once, and must do nothing outside
 * its transaction (what it returns is taken from its last run). A write
 * that declares `touches` must change no other object. Why:
 * 10% of a fleet publishing new endpoints at once is hundreds of writes to
 * one organization in a second, and at one commit each they queued for
 * seconds. A write alone runs as before, without a savepoint.
 */
export function writeInOrg<T>(db: Database, bus: SignalBus, orgId: string, fn: (w: OrgWrite) => Promise<T>, options: WriteOptions = {}): Promise<T> {
  let byOrg = queues.get(db);
  if (!byOrg) {
    byOrg = new Map();
    queues.set(db, byOrg);
  }
  let queue = byOrg.get(orgId);
  if (!queue) {
    queue = { waiting: [], running: false };
    byOrg.set(orgId, queue);
  }
  if (queue.waiting.length >= MAX_WAITING_WRITES) {
    return Promise.reject(new ApiError('unavailable', 'too many writes to this organization are waiting; retry', undefined, { retryAfterS: 1 }));
  }
  const q = queue;
  const orgs = byOrg;
  return new Promise<T>((resolve, reject) => {
    // Run in the caller's async context, whoever's transaction carries it: the audit log's actor is read from there.
    q.waiting.push({ fn: AsyncResource.bind(fn), touches: options.touches, resolve: resolve as (value: unknown) => void, reject });
    if (!q.running) void drain(db, bus, orgId, q, orgs);
  });
}

async function drain(db: Database, bus: SignalBus, orgId: string, queue: OrgQueue, byOrg: Map<string, OrgQueue>): Promise<void> {
  queue.running = true;
  try {
    while (queue.waiting.length > 0) {
      const batch = queue.waiting.splice(0, MAX_WRITES_PER_COMMIT);
      if (batch.length === 1) await runAlone(db, bus, orgId, batch[0] as Pending);
      else await runTogether(db, bus, orgId, batch);
    }
  } finally {
    queue.running = false;
    if (queue.waiting.length === 0) byOrg.delete(orgId);
  }
}

async function runAlone(db: Database, bus: SignalBus, orgId: string, p: Pending): Promise<void> {
  let took = false;
  let signalled = false;
  try {
    const result = await db.transaction(async (tx) => {
      const { write, taken, answered } = revisionTaker(tx, orgId);
      // In the write's first round trip: see lockHead.
      void write.pipelined(lockHead(tx, orgId));
      const out = await p.fn(write);
      took = taken() !== undefined;
      // Sent behind the write's pipelined statements, before their answers: the same round trip.
      const signal = took ? bus.notifyInTransaction(tx, orgSignal(orgId)) : Promise.resolve(false);
      // A failed write fails the signal's statement too (the transaction is aborted): the write's error is the one.
      const [writes, sent] = await Promise.allSettled([answered(), signal]);
      if (writes.status === 'rejected') throw writes.reason;
      if (sent.status === 'rejected') throw sent.reason;
      signalled = sent.value;
      return out;
    });
    if (took && !signalled) bus.notify(orgSignal(orgId));
    p.resolve(result);
  } catch (err) {
    p.reject(err);
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * A batch: first as one run of every write, without savepoints, the
 * objects its writes declared read and locked in one query, and each
 * write's statements pipelined behind the next write's (the common case,
 * every write succeeding, then costs a round trip per write instead of
 * three). When a write fails, that transaction is rolled back and the
 * batch runs again with a savepoint per write, so the failure is undone
 * alone (runIsolated); the writes up to the failure then run twice.
 */
async function runTogether(db: Database, bus: SignalBus, orgId: string, batch: readonly Pending[]): Promise<void> {
  if (await runOptimistic(db, bus, orgId, batch)) return;
  await runIsolated(db, bus, orgId, batch);
}

function touchKey(kind: WatchKind, id: string): string {
  return `${kind}/${id}`;
}

/** Marks a failure of one of the batch's writes, as opposed to the transaction's own (BEGIN, COMMIT, the connection). */
class WriteFailed extends Error {}

/** The live objects the batch's writes declared, locked in id order: writes of other replicas lock theirs after the row, one at a time. */
async function prefetch(tx: Queryable, orgId: string, batch: readonly Pending[]): Promise<Map<string, StoredValue>> {
  const ids = [...new Set(batch.flatMap((p) => (p.touches ?? []).map((t) => t.id)))];
  const found = new Map<string, StoredValue>();
  if (ids.length === 0) return found;
  const rows = await tx.query<{ id: string; kind: WatchKind; value: StoredValue }>(
    'SELECT id, kind, value FROM objects WHERE org_id = $1 AND id = ANY($2::uuid[]) AND NOT deleted ORDER BY id FOR UPDATE',
    [orgId, ids],
  );
  for (const r of rows) found.set(touchKey(r.kind, r.id), r.value);
  return found;
}

/** Resolves true once every write of the batch committed and was settled (or the transaction itself failed, which rejects them all); false, with nothing committed or settled, when a write failed. */
async function runOptimistic(db: Database, bus: SignalBus, orgId: string, batch: readonly Pending[]): Promise<boolean> {
  const values: unknown[] = [];
  let took = false;
  let signalled = false;
  try {
    await db.transaction(async (tx) => {
      const answers: Promise<void>[] = [];
      try {
        // The counter is read with its lock and written once, after the last write: 200 writes were 200 updates of one row.
        let head = await lockHead(tx, orgId);
        const prefetched = await prefetch(tx, orgId, batch);
        for (const p of batch) {
          // A write that declared nothing may change any object: what was read for the others is stale from then on.
          if (p.touches === undefined) prefetched.clear();
          const { write, taken, answered } = revisionTaker(tx, orgId, head, prefetched, true);
          values.push(await p.fn(write));
          const answer = answered();
          // Read below, or dropped with the transaction when a later write throws first.
          answer.catch(() => undefined);
          answers.push(answer);
          const revision = taken();
          if (revision !== undefined) {
            took = true;
            head = revision;
          }
        }
        if (took && head !== undefined) {
          // Fails when a write of the batch deleted the organization: the batch then runs again, each write on its own, to say which fail.
          answers.push(
            tx.query('UPDATE orgs SET head_revision = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id', [orgId, head]).then((rows) => {
              if (rows.length === 0) throw notFound('organization');
            }),
          );
        }
        for (const o of await Promise.allSettled(answers)) if (o.status === 'rejected') throw o.reason;
      } catch (err) {
        throw new WriteFailed('a write of the batch failed', { cause: err });
      }
      if (took) signalled = await bus.notifyInTransaction(tx, orgSignal(orgId));
    });
  } catch (err) {
    if (err instanceof WriteFailed) return false;
    // The transaction itself failed: nothing of the batch is written, and each write says so.
    for (const p of batch) p.reject(err);
    return true;
  }
  if (took && !signalled) bus.notify(orgSignal(orgId));
  batch.forEach((p, i) => p.resolve(values[i]));
  return true;
}

/** Each write of the batch in a savepoint of its own: one that fails is undone alone, and the others commit. */
async function runIsolated(db: Database, bus: SignalBus, orgId: string, batch: readonly Pending[]): Promise<void> {
  const outcomes: Outcome[] = [];
  let took = false;
  let signalled = false;
  try {
    await db.transaction(async (tx) => {
      // The head as this transaction holds it, once a write took a revision and was kept: the next writes count on
      // from it without a round trip each (a write undone by its savepoint gives its revision back).
      let head: number | undefined;
      await lockHead(tx, orgId);
      for (const p of batch) {
        try {
          const { value, revision } = await tx.savepoint(async (sp) => {
            const { write, taken, answered } = revisionTaker(sp, orgId, head);
            const out = await p.fn(write);
            await answered();
            return { value: out, revision: taken() };
          });
          if (revision !== undefined) {
            took = true;
            head = revision;
          }
          outcomes.push({ ok: true, value });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
      if (took) signalled = await bus.notifyInTransaction(tx, orgSignal(orgId));
    });
  } catch (err) {
    // The commit (or the transaction itself) failed: nothing of the batch is written, and each write says so.
    for (const p of batch) p.reject(err);
    return;
  }
  if (took && !signalled) bus.notify(orgSignal(orgId));
  batch.forEach((p, i) => {
    const o = outcomes[i];
    if (o?.ok) p.resolve(o.value);
    else p.reject(o?.error);
  });
}

/**
 * Takes the organization's row lock (the one its head revision's update
 * takes) before anything else the transaction locks. Every write of an
 * organization takes it, so taking it first orders their locks one way:
 * a batch takes its first write's object, then the row, then its next
 * write's object; another replica's write holding that object and waiting
 * for the row made a deadlock (PostgreSQL 40P01, a 500 to one of them),
 * seen with three replicas writing one organization. `FOR NO KEY UPDATE`,
 * as the update itself: rows that merely reference the organization still
 * insert. A missing or deleted organization locks nothing; the write then
 * fails with 404 as before.
 */
async function lockHead(tx: Queryable, orgId: string): Promise<number | undefined> {
  const rows = await tx.query<{ head_revision: unknown }>('SELECT head_revision FROM orgs WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE', [orgId]);
  const row = rows[0];
  return row === undefined ? undefined : Number(row.head_revision);
}

/** Fails with 404 unless the organization exists and isn't deleted. */
export async function requireOrg(q: Queryable, orgId: string): Promise<{ head: number; compacted: number }> {
  const rows = await q.query<{ head_revision: number; compacted_revision: number }>(
    'SELECT head_revision, compacted_revision FROM orgs WHERE id = $1 AND deleted_at IS NULL',
    [orgId],
  );
  const row = rows[0];
  if (!row) throw notFound('organization');
  return { head: Number(row.head_revision), compacted: Number(row.compacted_revision) };
}
