import type { DeviceObject } from './schemas/device.js';
import type { Organization } from './schemas/organization.js';
import type { SecurityGroup } from './schemas/security-group.js';
import type { ErrorCode } from './errors.js';

/** Watchable kinds, as named on the wire. */
export const WATCH_KINDS = ['device', 'security-group', 'organization'] as const;
export type WatchKind = (typeof WATCH_KINDS)[number];

/** The object each kind's `change`/`delete` events carry. */
export interface KindValue {
  device: DeviceObject;
  'security-group': SecurityGroup;
  organization: Organization;
}

export const MAX_WATCHES = 16;

export const EVENT_TYPES = ['change', 'patch', 'delete', 'tail', 'bookmark', 'error', 'gzip'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type ChangeEvent<K extends WatchKind = WatchKind> = {
  [P in K]: { kind: P; type: 'change'; value: KindValue[P] };
}[K];

export type DeleteEvent<K extends WatchKind = WatchKind> = {
  [P in K]: { kind: P; type: 'delete'; value: KindValue[P] };
}[K];

/**
 * What a `patch` event carries: object `id` went from revision
 * `from_revision` (which the client holds: the events before this one
 * brought it) to `revision`, and `set` holds each top-level member whose
 * value changed, whole. The new object is the old one with those members
 * replaced and `revision` set; a patch never removes a member.
 */
export interface PatchValue {
  revision: number;
  from_revision: number;
  id: string;
  set: Record<string, unknown>;
}

export type PatchEvent<K extends WatchKind = WatchKind> = {
  [P in K]: { kind: P; type: 'patch'; value: PatchValue };
}[K];

/**
 * What a `gzip` event carries: `data` is the base64 of the gzip of one
 * whole event line of the same kind (a `change`, `patch` or `delete`, with
 * this `revision`), which the client handles as if that line had come.
 */
export interface GzipValue {
  revision: number;
  data: string;
}

export type GzipEvent<K extends WatchKind = WatchKind> = {
  [P in K]: { kind: P; type: 'gzip'; value: GzipValue };
}[K];

export interface TailEvent<K extends WatchKind = WatchKind> {
  kind: K;
  type: 'tail';
  value: { revision: number };
}

export interface BookmarkEvent {
  type: 'bookmark';
  value: { revision: number };
}

/** Stream-level errors a watch can end with (docs/protocol.md "Watch"). */
export const WATCH_ERROR_CODES = ['revision_compacted', 'slow_consumer', 'unavailable', 'forbidden'] as const;
export type WatchErrorCode = (typeof WATCH_ERROR_CODES)[number];

export interface ErrorEvent {
  type: 'error';
  value: { code: ErrorCode; message: string };
}

/** One line of a watch stream: a discriminated union on `type`. */
export type WatchEvent = ChangeEvent | PatchEvent | DeleteEvent | GzipEvent | TailEvent | BookmarkEvent | ErrorEvent;

/**
 * Applies a patch to the object the client holds. Undefined when the client
 * doesn't hold `from_revision` of it: its state no longer follows the stream,
 * and it must list again.
 */
export function applyPatch<T extends { id: string; revision: number }>(held: T | undefined, patch: PatchValue): T | undefined {
  if (held === undefined || held.id !== patch.id || held.revision !== patch.from_revision) return undefined;
  return { ...held, ...patch.set, revision: patch.revision };
}

export function isWatchKind(value: unknown): value is WatchKind {
  return typeof value === 'string' && (WATCH_KINDS as readonly string[]).includes(value);
}
