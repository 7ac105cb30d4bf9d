import { WATCH_KINDS, applyPatch, paths, type WatchEvent, type WatchKind } from '../../../src/protocol/index.js';
import type { Harness } from '../../server/fixtures.js';
import type { WatchSpec } from './watch-client.js';

/** id → latest value, per kind: what a client holds and what the server lists. */
export type KindState = Record<WatchKind, Map<string, unknown>>;

export function emptyState(): KindState {
  return { device: new Map(), 'security-group': new Map(), organization: new Map() };
}

/** Plain, sorted form of a state, for `toEqual` with readable diffs. */
export function plain(state: KindState): Record<WatchKind, Record<string, unknown>> {
  const out = {} as Record<WatchKind, Record<string, unknown>>;
  for (const kind of WATCH_KINDS) {
    out[kind] = Object.fromEntries([...state[kind].entries()].sort(([a], [b]) => a.localeCompare(b)));
  }
  return out;
}

/** The server's state as its lists report it; devices without `status` (watch events never carry it). */
export async function serverState(h: Harness, org: string): Promise<KindState> {
  const state = emptyState();
  const devices = await h.ok<{ items: Record<string, unknown>[] }>(200, 'GET', paths.devices(org));
  for (const d of devices.items) {
    const { status: _status, ...rest } = d;
    state.device.set(String(d['id']), rest);
  }
  const groups = await h.ok<{ items: Record<string, unknown>[] }>(200, 'GET', paths.securityGroups(org));
  for (const g of groups.items) state['security-group'].set(String(g['id']), g);
  const o = await h.ok<Record<string, unknown>>(200, 'GET', paths.organization(org));
  state.organization.set(String(o['id']), o);
  return state;
}

interface Resume {
  gt: number;
  atTail: boolean;
}

/**
 * A client that resumes as docs/protocol.md says: per kind, the highest revision
 * seen in that kind's change/delete/tail events or in any bookmark, and
 * `at_tail` once it saw the tail. It applies events to its local state and
 * records every violation of the stream's ordering rules it sees.
 */
export class ResumingClient {
  readonly state = emptyState();
  readonly violations: string[] = [];
  private readonly resume = new Map<WatchKind, Resume>();
  /** Per-session bookkeeping for the ordering checks. */
  private session = { lastByKind: new Map<WatchKind, number>(), tailsPending: new Set<WatchKind>(), lastAfterTails: 0, gts: new Map<WatchKind, number>() };
  sessions = 0;
  events = 0;
  /** `patch` events applied. */
  patches = 0;

  constructor(
    readonly name: string,
    readonly kinds: readonly WatchKind[] = WATCH_KINDS,
    /** Asks for patch events, and applies them to the object it holds. */
    readonly withPatches = false,
  ) {
    for (const k of kinds) this.resume.set(k, { gt: 0, atTail: false });
  }

  /** Forgets everything, as a new client (or one told `revision_compacted`) would: the next session lists from 0. */
  reset(): void {
    for (const kind of WATCH_KINDS) this.state[kind].clear();
    for (const k of this.kinds) this.resume.set(k, { gt: 0, atTail: false });
  }

  /** The body of the next watch request, and the start of a new session. */
  startSession(): WatchSpec[] {
    this.sessions++;
    const specs: WatchSpec[] = this.kinds.map((kind) => {
      const r = this.resume.get(kind) ?? { gt: 0, atTail: false };
      return { kind, gt_revision: r.gt, at_tail: r.atTail, ...(this.withPatches ? { patches: true } : {}) };
    });
    this.session = {
      lastByKind: new Map(),
      tailsPending: new Set(specs.filter((s) => s.at_tail !== true).map((s) => s.kind)),
      lastAfterTails: 0,
      gts: new Map(specs.map((s) => [s.kind, s.gt_revision ?? 0])),
    };
    return specs;
  }

  /** The lowest resume revision over all kinds (the client is consistent up to it). */
  get position(): number {
    return Math.min(...[...this.resume.values()].map((r) => r.gt));
  }

  /** Broken off inside a list: some kind has a resume revision but not its tail (the original bug's case). */
  get midList(): boolean {
    return [...this.resume.values()].some((r) => r.gt > 0 && !r.atTail);
  }

  get atTail(): boolean {
    return [...this.resume.values()].every((r) => r.atTail);
  }

  private bump(kind: WatchKind, revision: number, tail = false): void {
    const r = this.resume.get(kind);
    if (!r) return;
    r.gt = Math.max(r.gt, revision);
    if (tail) r.atTail = true;
  }

  private violation(msg: string, e: WatchEvent): void {
    this.violations.push(`${this.name} session ${this.sessions}: ${msg}: ${JSON.stringify(e).slice(0, 300)}`);
  }

  apply(e: WatchEvent): void {
    this.events++;
    const s = this.session;
    const allTails = s.tailsPending.size === 0;
    switch (e.type) {
      case 'change':
      case 'patch':
      case 'delete': {
        const rev = e.value.revision;
        const last = s.lastByKind.get(e.kind) ?? 0;
        if (rev <= last) this.violation(`${e.kind} revision ${rev} not after ${last}`, e);
        if (rev <= (s.gts.get(e.kind) ?? 0)) this.violation(`revision ${rev} not after gt_revision`, e);
        if (allTails && rev <= s.lastAfterTails) this.violation(`revision ${rev} out of order after the tails`, e);
        if (e.kind === 'device' && e.type !== 'patch' && 'status' in e.value) this.violation('device event carries status', e);
        if (e.type === 'patch' && 'status' in e.value.set) this.violation('device patch carries status', e);
        s.lastByKind.set(e.kind, rev);
        if (allTails) s.lastAfterTails = rev;
        if (e.type === 'patch') {
          if (!this.withPatches) this.violation('a patch to a watch that did not ask for patches', e);
          const held = this.state[e.kind].get(e.value.id) as { id: string; revision: number } | undefined;
          const next = applyPatch(held, e.value);
          if (next === undefined) this.violation(`a patch from revision ${e.value.from_revision}, but the client holds ${held ? `revision ${held.revision}` : 'nothing'}`, e);
          else this.state[e.kind].set(e.value.id, next);
          this.patches++;
        } else if (e.type === 'change') this.state[e.kind].set(e.value.id, e.value);
        else this.state[e.kind].delete(e.value.id);
        this.bump(e.kind, rev);
        return;
      }
      case 'tail': {
        if (!s.tailsPending.delete(e.kind)) this.violation(`unexpected tail of ${e.kind}`, e);
        const last = s.lastByKind.get(e.kind) ?? 0;
        if (e.value.revision < last) this.violation(`tail revision below the kind's last event ${last}`, e);
        s.lastByKind.set(e.kind, e.value.revision);
        if (s.tailsPending.size === 0) s.lastAfterTails = Math.max(...s.lastByKind.values(), s.lastAfterTails);
        this.bump(e.kind, e.value.revision, true);
        return;
      }
      case 'bookmark': {
        if (!allTails) this.violation('bookmark before the tails', e);
        if (e.value.revision < s.lastAfterTails) this.violation(`bookmark below the last event ${s.lastAfterTails}`, e);
        s.lastAfterTails = Math.max(s.lastAfterTails, e.value.revision);
        for (const k of this.kinds) {
          s.lastByKind.set(k, Math.max(s.lastByKind.get(k) ?? 0, e.value.revision));
          this.bump(k, e.value.revision);
        }
        return;
      }
      case 'error':
        return;
    }
  }
}
