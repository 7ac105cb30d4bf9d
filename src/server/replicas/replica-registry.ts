import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/index.js';
import { fullJitterDelay } from '../../util/backoff.js';
import { sleep } from '../../util/sleep.js';

/** A row of the `replicas` table. */
export interface ReplicaInfo {
  readonly id: string;
  /** Where other replicas reach this one's private listener; null when it has none. */
  readonly privateUrl: string | null;
  readonly startedAt: Date;
  /** The replica counts as dead after this instant (database clock). */
  readonly leaseExpiresAt: Date;
  /** Whether it relays packets between devices (`--relay`). */
  readonly relay: boolean;
  /** The URL it advertises for its relay (`--relay-url`); null: wherever a client reached the server. */
  readonly relayUrl: string | null;
}

export interface ReplicaRegistryOptions {
  db: Database;
  /** This replica's id; default a random UUID. */
  id?: string;
  privateUrl?: string | undefined;
  /** This replica's relay, written with its lease (default: on, no URL of its own). */
  relay?: { readonly on: boolean; readonly url: string | undefined };
  /** Lifetime of a lease (ms). */
  leaseTtlMs: number;
  /** Called after this replica's row had expired, been collected and was inserted again (what hung on it went with it). */
  onRegisteredAgain?: () => void;
  /** How often the lease is renewed (ms); default leaseTtlMs / 3. */
  renewIntervalMs?: number;
  logger: Logger;
}

export interface StopOptions {
  /** Delete this replica's row (default true). False leaves it to expire, as after a crash. */
  deregister?: boolean;
}

// Leases use the database clock, so replicas' clocks needn't agree.
const LEASE_EXPIRY = `now() + $2::float8 * interval '1 millisecond'`;

/**
 * Replica discovery: this replica's row in `replicas`, its lease renewed every
 * `renewIntervalMs` until stopped. Each renewal also deletes expired rows
 * (any replica collects every replica's garbage). A renewal that fails is
 * retried with backoff; if the lease expired meanwhile (and the row was
 * collected), the next renewal inserts it again.
 */
export class ReplicaRegistry {
  readonly id: string;
  private readonly renewIntervalMs: number;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;

  constructor(private readonly options: ReplicaRegistryOptions) {
    this.id = options.id ?? randomUUID();
    this.renewIntervalMs = options.renewIntervalMs ?? options.leaseTtlMs / 3;
  }

  /**
   * Inserts this replica's row (rejects if it can't) and keeps renewing it
   * until `stop()`, or until `signal` aborts (which stops and deregisters).
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.loop) throw new Error('replica registry already started');
    await this.register(false);
    await this.collectGarbage();
    this.loop = this.renewLoop(this.stopping.signal);
    if (signal?.aborted) void this.stop();
    else signal?.addEventListener('abort', () => void this.stop(), { once: true });
    this.options.logger.info({ replica: this.id, privateUrl: this.options.privateUrl }, 'replica registered');
  }

  /** Replicas whose lease has not expired, oldest first. */
  list(): Promise<ReplicaInfo[]> {
    return listReplicas(this.options.db);
  }

  /** Deletes expired rows; returns how many. */
  async collectGarbage(): Promise<number> {
    const rows = await this.options.db.query<{ id: string }>('DELETE FROM replicas WHERE lease_expires_at < now() RETURNING id');
    if (rows.length > 0) this.options.logger.info({ replicas: rows.map((r) => r.id) }, 'expired replicas removed');
    return rows.length;
  }

  /**
   * Stops renewing; by default deletes this replica's row. A failed delete is
   * logged, not thrown: the row then expires by itself. Idempotent.
   */
  stop(options: StopOptions = {}): Promise<void> {
    this.stopped ??= this.shutdown(options.deregister ?? true);
    return this.stopped;
  }

  private async shutdown(deregister: boolean): Promise<void> {
    this.stopping.abort();
    await this.loop;
    if (!deregister || !this.loop) return;
    try {
      await this.options.db.query('DELETE FROM replicas WHERE id = $1', [this.id]);
      this.options.logger.info({ replica: this.id }, 'replica deregistered');
    } catch (err) {
      this.options.logger.warn({ err, replica: this.id }, 'replica deregistration failed; its lease will expire');
    }
  }

  private async renewLoop(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      const delay = failures === 0 ? this.renewIntervalMs : Math.min(this.renewIntervalMs, 20 + fullJitterDelay(failures, 100, this.renewIntervalMs));
      if (!(await sleep(delay, signal))) return; // aborted: stopping
      try {
        await this.renew();
        failures = 0;
      } catch (err) {
        failures++;
        this.options.logger.warn({ err, failures, replica: this.id }, 'replica lease renewal failed; retrying');
      }
    }
  }

  /**
   * Renews this lease and removes the others' expired rows in one statement:
   * an idle fleet's write rate is per replica and interval, so each renewal
   * is a single write.
   */
  private async renew(): Promise<void> {
    const { db, leaseTtlMs, privateUrl } = this.options;
    const rows = await db.query<{ renewed: unknown; gone: string[] | null }>(
      `WITH gone AS (
         DELETE FROM replicas WHERE lease_expires_at < now() AND id <> $1 RETURNING id
       ), renewed AS (
         UPDATE replicas SET lease_expires_at = ${LEASE_EXPIRY}, private_url = $3, relay = $4, relay_url = $5 WHERE id = $1 RETURNING id
       )
       SELECT (SELECT count(*) FROM renewed) AS renewed, (SELECT array_agg(id) FROM gone) AS gone`,
      [this.id, leaseTtlMs, privateUrl ?? null, ...this.relayParams()],
    );
    const row = rows[0];
    if (row?.gone && row.gone.length > 0) this.options.logger.info({ replicas: row.gone }, 'expired replicas removed');
    if (Number(row?.renewed) === 0) await this.register(true);
  }

  /** `relay` and `relay_url` as the statements take them. */
  private relayParams(): [boolean, string | null] {
    const relay = this.options.relay;
    return [relay?.on ?? true, relay?.url ?? null];
  }

  private async register(renewal: boolean): Promise<void> {
    const { db, leaseTtlMs, privateUrl } = this.options;
    const params = [this.id, leaseTtlMs, privateUrl ?? null, ...this.relayParams()];
    const updated = await db.query(
      `UPDATE replicas SET lease_expires_at = ${LEASE_EXPIRY}, private_url = $3, relay = $4, relay_url = $5 WHERE id = $1 RETURNING id`,
      params,
    );
    if (updated.length > 0) return;
    if (renewal) this.options.logger.warn({ replica: this.id }, 'replica lease had expired and was collected: registering again');
    await db.query(
      `INSERT INTO replicas (id, private_url, lease_expires_at, relay, relay_url) VALUES ($1, $3, ${LEASE_EXPIRY}, $4, $5)
       ON CONFLICT (id) DO UPDATE SET lease_expires_at = EXCLUDED.lease_expires_at, private_url = EXCLUDED.private_url,
         relay = EXCLUDED.relay, relay_url = EXCLUDED.relay_url`,
      params,
    );
    if (renewal) this.options.onRegisteredAgain?.();
  }
}

/** Live replicas (lease not expired), oldest first. */
export async function listReplicas(q: Queryable): Promise<ReplicaInfo[]> {
  const rows = await q.query<{ id: string; private_url: string | null; started_at: unknown; lease_expires_at: unknown; relay: boolean; relay_url: string | null }>(
    'SELECT id, private_url, started_at, lease_expires_at, relay, relay_url FROM replicas WHERE lease_expires_at > now() ORDER BY started_at, id',
  );
  return rows.map((r) => ({
    id: r.id,
    privateUrl: r.private_url,
    startedAt: toDate(r.started_at),
    leaseExpiresAt: toDate(r.lease_expires_at),
    relay: r.relay,
    relayUrl: r.relay_url,
  }));
}

function toDate(v: unknown): Date {
  if (v instanceof Date) return v;
  if (typeof v === 'string' || typeof v === 'number') return new Date(v);
  throw new TypeError(`not a timestamp: ${String(v)}`);
}
