import { Type, type Static } from '@sinclair/typebox';
import { Revision, strict } from './schemas/common.js';
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

export const Watch = Type.Object(
  {
    kind: Type.Union(WATCH_KINDS.map((k) => Type.Literal(k))),
    gt_revision: Type.Optional(Revision),
    at_tail: Type.Optional(Type.Boolean()),
  },
  { ...strict, $id: 'Watch' },
);

/** Body of `POST .../events`: 1..16 watches, each kind at most once (checked by the server). */
export const WatchRequest = Type.Array(Watch, { minItems: 1, maxItems: MAX_WATCHES, $id: 'WatchRequest' });

export type Watch = Static<typeof Watch>;
export type WatchRequest = Static<typeof WatchRequest>;

export const EVENT_TYPES = ['change', 'delete', 'tail', 'bookmark', 'error'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type ChangeEvent<K extends WatchKind = WatchKind> = {
  [P in K]: { kind: P; type: 'change'; value: KindValue[P] };
}[K];

export type DeleteEvent<K extends WatchKind = WatchKind> = {
  [P in K]: { kind: P; type: 'delete'; value: KindValue[P] };
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
export type WatchEvent = ChangeEvent | DeleteEvent | TailEvent | BookmarkEvent | ErrorEvent;

export function isWatchKind(value: unknown): value is WatchKind {
  return typeof value === 'string' && (WATCH_KINDS as readonly string[]).includes(value);
}
