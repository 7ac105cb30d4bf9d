import { STATUS_ACK_MODES, TUNNEL_FRAME_TYPES, type DevicePatch, type DeviceStatusInput } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import { COUNTER, bump, type AgentCounters } from './agent-counters.js';
import type { AckMode, AgentIdentity, AgentTarget, PatchOutcome, ProgressField, WatchDiagnosis } from './agent-messages.js';
import { AgentTunnel } from './agent-tunnel.js';
import { AgentWatch, STREAM_SILENCE_MS } from './agent-watch.js';
import { WatchEventTally } from './event-tally.js';
import { Backoff } from '../../util/backoff.js';
import type { StatusPutSender } from './status-put.js';

/** The load worker, as its agents see it. */
export interface AgentHost {
  readonly counters: AgentCounters;
  /** The worker's PUT pool for the current target (ACKs by PUT). */
  putSender(): StatusPutSender | undefined;
  /** An agent's progress value rose from `before` to `after` (see ProgressField). */
  progress(agent: SimAgent, field: ProgressField, before: number, after: number): void;
}

/** Frames awaiting a status_ack are forgotten past this (a server that never answers them). */
const MAX_UNACKED = 64;
/** A failed PUT is retried like the agent's status reporter: 1 s doubling to 30 s, full jitter. */
const PUT_RETRY = { initialMs: 1_000, maxMs: 30_000, resetAfterMs: Number.MAX_SAFE_INTEGER };

/**
 * One simulated `fleetplane agent`: a watch stream on its organization, a
 * tunnel, and ACKs. Whenever the revision it has seen rises (checked once
 * per read of its watch socket, see AgentWatchEvents.onSeen) it reports
 * `{applied_revision: R, apply_error: null, …}`: as a tunnel `status` frame
 * (expecting a `status_ack` of the same `seq` until the server acked one on
 * that connection, then asking only for errors, as the agent does), or by
 * `PUT .../status`, or
 * not at all (`none`, for the raw floor). It applies nothing.
 *
 * Progress values (for the harness's waits), -Infinity until known:
 * `seen`/`acked` are revisions, `ready`/`tunnel` the last time (nowMs()) the
 * watch reached its tails / the tunnel opened.
 */
export class SimAgent {
  seen = 0;
  seenAt = Number.NEGATIVE_INFINITY;
  acked = 0;
  ackedAt = Number.NEGATIVE_INFINITY;
  readyAt = Number.NEGATIVE_INFINITY;
  tunnelAt = Number.NEGATIVE_INFINITY;
  running = false;
  private watch: AgentWatch | undefined;
  private tunnel: AgentTunnel | undefined;
  private target: AgentTarget | undefined;
  private ackMode: AckMode = 'none';
  private seq = 0;
  /** Highest revision sent in the current mode (a frame or PUT may still be unanswered). */
  private sent = 0;
  private readonly unacked = new Map<number, number>();
  /** The server acked a frame on the current tunnel connection: later frames ask only for errors, as the agent's do. */
  private recordsStatus = false;
  private putBusy = false;
  private putTimer: NodeJS.Timeout | undefined;
  private readonly putRetry = new Backoff(PUT_RETRY);
  private pastLines = 0;
  private pastBodyBytes = 0;
  private readonly pastTally = new WatchEventTally();
  /** Bumped by every start: answers to a PUT of an earlier start are ignored. */
  private session = 0;

  constructor(
    readonly index: number,
    readonly identity: AgentIdentity,
    private readonly localAddress: string,
    private readonly host: AgentHost,
  ) {}

  /** Watch lines and NDJSON bytes so far, over every start (for counters; cheaper than a counter bump per line). */
  get watchLines(): number {
    return this.pastLines + (this.watch?.lines ?? 0);
  }

  get watchBodyBytes(): number {
    return this.pastBodyBytes + (this.watch?.bodyBytes ?? 0);
  }

  /** Adds this agent's `change`/`patch`/`delete` lines, over every start, to `into`. */
  addEventsTo(into: WatchEventTally): void {
    into.addAll(this.pastTally);
    if (this.watch) into.addAll(this.watch.tally);
  }

  get watchReady(): boolean {
    return this.watch?.isReady ?? false;
  }

  get watchOpen(): boolean {
    return this.watch?.isOpen ?? false;
  }

  get tunnelOpen(): boolean {
    return this.tunnel?.isOpen ?? false;
  }

  /** Where the watch is (undefined while the agent is stopped). */
  diagnose(now: number): WatchDiagnosis | undefined {
    if (!this.watch) return undefined;
    return { deviceId: this.identity.deviceId, ...this.watch.diagnose(now) };
  }

  value(field: ProgressField): number {
    if (field === 'seen') return this.seen;
    if (field === 'acked') return this.acked;
    if (field === 'ready') return this.readyAt;
    return this.tunnelAt;
  }

  /** The time `field` last rose, or the value itself for the time fields. */
  timeOf(field: ProgressField): number {
    if (field === 'seen') return this.seenAt;
    if (field === 'acked') return this.ackedAt;
    return this.value(field);
  }

  /** Starts afresh against `target`: lists everything, opens the tunnel if asked. */
  start(target: AgentTarget): void {
    this.stop();
    this.session++;
    this.target = target;
    this.ackMode = target.ack;
    this.seen = this.acked = this.sent = 0;
    this.seenAt = this.ackedAt = this.readyAt = this.tunnelAt = Number.NEGATIVE_INFINITY;
    this.unacked.clear();
    this.running = true;
    const watchTarget = { host: target.host, port: target.port, org: target.org, token: this.identity.token };
    const watch = new AgentWatch(
      watchTarget,
      this.localAddress,
      this.host.counters,
      {
        onReady: (at) => this.set('ready', at),
        onSeen: (revision, at) => {
          this.seenAt = at;
          this.set('seen', revision);
          this.ack();
        },
      },
      target.bookmarks ? STREAM_SILENCE_MS : undefined,
    );
    this.watch = watch;
    if (target.tunnel) {
      this.tunnel = new AgentTunnel(AgentTunnel.urlOf(target.host, target.port), this.identity.token, this.localAddress, this.host.counters, {
        onOpen: (at) => {
          this.set('tunnel', at);
          this.recordsStatus = false;
          // As the agent does: the status again on every new connection (a frame sent on one that closed may be lost).
          if (this.ackMode === 'tunnel') this.sent = 0;
          this.ack();
        },
        onStatusAck: (seq, error, at) => this.onStatusAck(seq, error, at),
        revision: () => this.seen,
      });
      this.tunnel.start();
    }
    watch.start();
  }

  /** Resets both connections and stops reconnecting and reporting. */
  stop(): void {
    this.running = false;
    if (this.watch) {
      this.watch.stop();
      this.pastLines += this.watch.lines;
      this.pastBodyBytes += this.watch.bodyBytes;
      this.pastTally.addAll(this.watch.tally);
      this.watch = undefined;
    }
    this.tunnel?.stop();
    this.tunnel = undefined;
    clearTimeout(this.putTimer);
    this.putTimer = undefined;
    this.putBusy = false;
  }

  /**
   * PATCHes this agent's own device with its token (the endpoint publisher's
   * request), through the worker's pool; never rejects.
   */
  async patchOwnDevice(body: DevicePatch): Promise<PatchOutcome> {
    const sender = this.host.putSender();
    const org = this.target?.org;
    if (!sender || org === undefined) return { agent: this.index, status: 0, revision: Number.NaN, lineBytes: Number.NaN, sentAt: Number.NaN, doneAt: Number.NaN, error: 'not started' };
    return { agent: this.index, ...(await sender.patchDevice(org, this.identity.deviceId, this.identity.token, body)) };
  }

  setAck(mode: AckMode): void {
    this.ackMode = mode;
    this.sent = this.acked;
    this.unacked.clear();
    this.ack();
  }

  private set(field: ProgressField, after: number): void {
    const before = this.value(field);
    if (field === 'seen') this.seen = after;
    else if (field === 'acked') this.acked = after;
    else if (field === 'ready') this.readyAt = after;
    else this.tunnelAt = after;
    if (after > before) this.host.progress(this, field, before, after);
  }

  private status(revision: number): DeviceStatusInput {
    return { applied_revision: revision, apply_error: null, local_endpoints: [], os: 'linux', agent_version: 'bench' };
  }

  private ack(): void {
    if (!this.running || this.seen <= this.sent) return;
    if (this.ackMode === 'tunnel') this.ackByFrame();
    else if (this.ackMode === 'put') this.ackByPut();
  }

  private ackByFrame(): void {
    const seq = ++this.seq;
    const revision = this.seen;
    const quiet = this.recordsStatus;
    const frame = { type: TUNNEL_FRAME_TYPES.status, seq, status: this.status(revision), ...(quiet ? { ack: STATUS_ACK_MODES.errors } : {}) };
    if (!this.tunnel?.send(frame)) return;
    bump(this.host.counters, COUNTER.statusFramesSent);
    this.sent = revision;
    if (quiet) {
      // The server answers it only if it can't record it: the ACK is done once sent, and convergence shows it recorded.
      this.ackedUpTo(revision, nowMs());
      return;
    }
    this.unacked.set(seq, revision);
    if (this.unacked.size > MAX_UNACKED) {
      const oldest = this.unacked.keys().next().value;
      if (oldest !== undefined) this.unacked.delete(oldest);
    }
  }

  private onStatusAck(seq: number, error: { code: string } | undefined, at: number): void {
    const revision = this.unacked.get(seq);
    this.unacked.delete(seq);
    if (error) {
      bump(this.host.counters, COUNTER.statusAckError(error.code));
      return;
    }
    bump(this.host.counters, COUNTER.statusAcks);
    if (revision === undefined) return;
    this.recordsStatus = true;
    this.ackedUpTo(revision, at);
  }

  /** `revision` is ACKed (at `at`, nowMs()), unless a later one already was. */
  private ackedUpTo(revision: number, at: number): void {
    if (revision <= this.acked) return;
    this.ackedAt = at;
    this.set('acked', revision);
  }

  /** One PUT at a time; a newer revision seen meanwhile goes in the next one. */
  private ackByPut(): void {
    const sender = this.host.putSender();
    const target = this.target;
    if (this.putBusy || this.putTimer || !sender || !target) return;
    this.putBusy = true;
    const revision = this.seen;
    const session = this.session;
    this.sent = revision;
    void sender.put(target.org, this.identity.deviceId, this.identity.token, this.status(revision)).then((outcome) => {
      if (session !== this.session) return;
      this.putBusy = false;
      if (!this.running || this.ackMode !== 'put') return;
      if (outcome.ok) {
        this.putRetry.reset();
        this.ackedUpTo(revision, nowMs());
        this.ack();
        return;
      }
      if (outcome.retryAfter !== undefined) bump(this.host.counters, COUNTER.retryAfterWaits);
      this.sent = this.acked;
      this.putTimer = setTimeout(() => {
        this.putTimer = undefined;
        this.ack();
      }, this.putRetry.next(0, outcome.retryAfter));
    });
  }
}
