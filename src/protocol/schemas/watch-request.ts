import { Type, type Static } from '@sinclair/typebox';
import { MAX_WATCHES, WATCH_KINDS } from '../watch.js';
import { Revision, strict } from './common.js';

export const Watch = Type.Object(
  {
    kind: Type.Union(WATCH_KINDS.map((k) => Type.Literal(k))),
    gt_revision: Type.Optional(Revision),
    at_tail: Type.Optional(Type.Boolean()),
    /** The client applies `patch` events of this kind (docs/protocol.md "Watch"); without it every change is a `change`. */
    patches: Type.Optional(Type.Boolean()),
    /** The client unpacks `gzip` events of this kind (docs/protocol.md "Watch"); without it every event is plain JSON. */
    gzip: Type.Optional(Type.Boolean()),
  },
  { ...strict, $id: 'Watch' },
);

/** Body of `POST .../events`: 1..16 watches, each kind at most once (checked by the server). */
export const WatchRequest = Type.Array(Watch, { minItems: 1, maxItems: MAX_WATCHES, $id: 'WatchRequest' });

export type Watch = Static<typeof Watch>;
export type WatchRequest = Static<typeof WatchRequest>;
