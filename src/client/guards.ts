import type { Tombstone as WireTombstone } from '../protocol/wire.js';

/** An item a list with `gt_revision` or a cursor returns for something deleted after that point. */
export type Tombstone = WireTombstone;

/** What every versioned resource has: the SDK relies on these two fields only. */
export interface Identified {
  id: string;
  revision: number;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function isRevision(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

export function isIdentified(v: unknown): v is Identified {
  return isRecord(v) && typeof v['id'] === 'string' && isRevision(v['revision']);
}

export function isTombstone(v: unknown): v is Tombstone {
  return isRecord(v) && v['deleted'] === true && isIdentified(v);
}

/**
 * A guard that checks only identity and revision: the SDK doesn't reject
 * fields it doesn't know (docs/protocol.md: fields may be added), and trusts the
 * server for the rest of the shape.
 */
export function identified<T extends Identified>(): (v: unknown) => v is T {
  return (v: unknown): v is T => isIdentified(v);
}

export function isObject<T extends object>(): (v: unknown) => v is T {
  return (v: unknown): v is T => isRecord(v);
}

export function listOf<T>(item: (v: unknown) => v is T): (v: unknown) => v is { items: T[]; next?: string } {
  return (v: unknown): v is { items: T[]; next?: string } =>
    isRecord(v) &&
    Array.isArray(v['items']) &&
    v['items'].every(item) &&
    (v['next'] === undefined || typeof v['next'] === 'string');
}
