import { watchLineHead, type WatchKind } from '../../protocol/index.js';
import type { StoredValue } from '../store/index.js';
import { chunk, chunkLine } from '../streams/index.js';

function previousValue(previous: Buffer): StoredValue | undefined {
  const line: unknown = JSON.parse(chunkLine(previous).toString('utf8'));
  if (typeof line !== 'object' || line === null || !('value' in line)) return undefined;
  const value = line.value;
  if (typeof value !== 'object' || value === null || !('revision' in value) || typeof value.revision !== 'number') return undefined;
  return value as StoredValue;
}

/**
 * The patch from the object's previous change event (`previous`, the chunk
 * the snapshot holds) to `value`, or undefined when that copy is not the
 * revision the write replaced (`previousRevision`), when it would not be smaller
 * than the whole object (`fullBytes`) or can't express the change (a member
 * went away). Members are compared by their JSON: both sides come from the
 * database's jsonb, whose key order is canonical.
 */
export function encodePatch(kind: WatchKind, previous: Buffer, value: StoredValue, previousRevision: number | undefined, fullBytes: number): Buffer | undefined {
  // Only from the revision the write replaced: a copy older than that missed a version a client may hold.
  if (previousRevision === undefined) return undefined;
  const old = previousValue(previous);
  if (old?.revision !== previousRevision) return undefined;
  for (const key of Object.keys(old)) if (!(key in value)) return undefined;
  const set: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (key === 'revision' || key === 'id') continue;
    const json = JSON.stringify(v);
    if (json !== JSON.stringify(old[key])) set.push(`${JSON.stringify(key)}:${json}`);
  }
  // `revision` first: a reader that needs only it finds it right after the line's head.
  const json = `${watchLineHead('patch', kind)}{"revision":${value.revision},"from_revision":${old.revision},"id":${JSON.stringify(value.id)},"set":{${set.join(',')}}}}`;
  const bytes = chunk(json);
  return bytes.length < fullBytes ? bytes : undefined;
}
