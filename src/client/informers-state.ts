import { WATCH_KINDS, type KindValue, type WatchKind } from '../protocol/wire.js';
import { isIdentified, isRecord, isRevision } from './guards.js';

/**
 * One kind's part of an InformersState: a cache and the point its watch
 * resumes from. `objects` are every live object of the kind as of
 * `revision` (a partial list while `atTail` is false); none is newer than
 * `revision`, ids are unique.
 */
export interface KindState<K extends WatchKind = WatchKind> {
  /** The revision the objects are consistent with: the watch resumes with `gt_revision: revision`. */
  revision: number;
  /** The kind's tail was seen: the watch resumes with `at_tail: true`. Only with `revision` > 0. */
  atTail: boolean;
  objects: Array<KindValue[K]>;
}

/**
 * What `SharedInformers.snapshot()` gives and `seed()` takes: per kind, its
 * objects and resume point. Plain JSON data (it survives
 * `JSON.parse(JSON.stringify(state))`), so it can be kept anywhere between
 * two runs. Kinds that are absent start from revision 0.
 */
export type InformersState = { [K in WatchKind]?: KindState<K> };

function kindProblem(kind: WatchKind, v: unknown): string | undefined {
  if (!isRecord(v)) return `${kind}: not an object`;
  const { revision, atTail, objects } = v;
  if (!isRevision(revision)) return `${kind}: revision is not a non-negative integer`;
  if (typeof atTail !== 'boolean') return `${kind}: atTail is not a boolean`;
  if (atTail && revision === 0) return `${kind}: atTail without a revision`;
  if (!Array.isArray(objects)) return `${kind}: objects is not an array`;
  const ids = new Set<string>();
  for (const o of objects) {
    if (!isIdentified(o)) return `${kind}: an object without id and revision`;
    if (o.revision < 1 || o.revision > revision) return `${kind}: object ${o.id} has revision ${o.revision}, outside 1..${revision}`;
    if (ids.has(o.id)) return `${kind}: object ${o.id} appears twice`;
    ids.add(o.id);
  }
  return undefined;
}

/**
 * Checks that `v` is an InformersState: known kinds only, each with a
 * resume point and objects as KindState describes. Like the watch stream's
 * parser, it checks only ids and revisions of the objects, not the rest of
 * their shape. Returns the state, or the first problem found.
 */
export function parseInformersState(v: unknown): { state: InformersState } | { problem: string } {
  if (!isRecord(v)) return { problem: 'not an object' };
  for (const key of Object.keys(v)) {
    if (!(WATCH_KINDS as readonly string[]).includes(key)) return { problem: `unknown kind ${JSON.stringify(key)}` };
  }
  for (const kind of WATCH_KINDS) {
    if (v[kind] === undefined) continue;
    const problem = kindProblem(kind, v[kind]);
    if (problem !== undefined) return { problem };
  }
  // Every present kind was checked above: ids, revisions and the resume point are as InformersState says.
  return { state: v as InformersState };
}
