import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { WATCH_KINDS, type BookmarkEvent, type ChangeEvent, type DeleteEvent, type ErrorEvent, type GzipEvent, type PatchEvent, type TailEvent, type WatchEvent } from '../watch.js';
import type { ConvergenceEvent } from '../convergence.js';
import { Convergence } from './fleet.js';
import { ErrorCodeSchema, OrNull, Revision, Timestamp } from './common.js';
import type { PageLine, StatusSummary } from '../page.js';
import { DeviceObject } from './device.js';
import { Organization } from './organization.js';
import { SecurityGroup } from './security-group.js';

/*
 * The lines of the two `application/json;stream=watch` streams as schemas,
 * for the OpenAPI document (docs/protocol.md "Watch" and "Fleet
 * convergence"). The TypeScript types in watch.ts and fleet.ts are the ones
 * code uses; the checks at the end keep the two equal.
 */

function objectEvent<K extends string, V extends TSchema>(kind: K, value: V, $id: string, description: string) {
  return Type.Object(
    { kind: Type.Literal(kind), type: Type.Union([Type.Literal('change'), Type.Literal('delete')]), value },
    { $id, description },
  );
}

export const DeviceEventSchema = objectEvent('device', DeviceObject, 'DeviceEvent', 'A device changed (its whole value) or was deleted (its last state, with the revision of the delete).');
export const SecurityGroupEventSchema = objectEvent('security-group', SecurityGroup, 'SecurityGroupEvent', 'A security group changed or was deleted.');
export const OrganizationEventSchema = objectEvent('organization', Organization, 'OrganizationEvent', "The organization's own settings changed, or it was deleted.");

const RevisionValue = Type.Object({ revision: Revision });

export const PatchEventSchema = Type.Object(
  {
    kind: Type.Union(WATCH_KINDS.map((k) => Type.Literal(k))),
    type: Type.Literal('patch'),
    value: Type.Object({
      revision: Revision,
      from_revision: Revision,
      id: Type.String(),
      set: Type.Record(Type.String(), Type.Unknown()),
    }),
  },
  {
    $id: 'PatchEvent',
    description:
      'Only to a watch that asked for patches: object id went from from_revision (which the client holds) to revision; set holds each top-level member whose value changed, whole. A client that does not hold from_revision lists again.',
  },
);

export const GzipEventSchema = Type.Object(
  {
    kind: Type.Union(WATCH_KINDS.map((k) => Type.Literal(k))),
    type: Type.Literal('gzip'),
    value: Type.Object({ revision: Revision, data: Type.String({ contentEncoding: 'base64' }) }),
  },
  {
    $id: 'GzipEvent',
    description:
      'Only to a watch that asked for gzip: data is the base64 of the gzip of one change, patch or delete line of this kind with this revision, which the client handles as if that line had come.',
  },
);

export const TailEventSchema = Type.Object(
  { kind: Type.Union(WATCH_KINDS.map((k) => Type.Literal(k))), type: Type.Literal('tail'), value: RevisionValue },
  { $id: 'TailEvent', description: "Everything of this kind that existed when the watch reached the head has been sent; value.revision is the kind's resume point." },
);

export const BookmarkEventSchema = Type.Object(
  { type: Type.Literal('bookmark'), value: RevisionValue },
  { $id: 'BookmarkEvent', description: 'The stream is consistent up to value.revision for every kind in it.' },
);

export const ErrorEventSchema = Type.Object(
  { type: Type.Literal('error'), value: Type.Object({ code: ErrorCodeSchema, message: Type.String() }) },
  { $id: 'ErrorEvent', description: 'The last line of a stream: why it ends.' },
);

/** One line of `POST .../events`. */
export const WatchEventSchema = Type.Union(
  [DeviceEventSchema, SecurityGroupEventSchema, OrganizationEventSchema, PatchEventSchema, GzipEventSchema, TailEventSchema, BookmarkEventSchema, ErrorEventSchema],
  { $id: 'WatchEvent', description: 'One line of a watch stream (newline-delimited JSON).' },
);

export const ConvergenceUpdateSchema = Type.Object(
  { type: Type.Literal('convergence'), value: Convergence },
  { $id: 'ConvergenceUpdate', description: 'The current convergence: first at once, then on every change, and again after each bookmark interval.' },
);

/** One line of `GET .../convergence?watch=true`. */
export const ConvergenceEventSchema = Type.Union([ConvergenceUpdateSchema, ErrorEventSchema], {
  $id: 'ConvergenceEvent',
  description: 'One line of a convergence stream (newline-delimited JSON).',
});

export const StatusSummarySchema = Type.Object(
  {
    id: Type.String(),
    online: Type.Boolean(),
    last_seen: OrNull(Timestamp),
    applied_revision: OrNull(Revision),
    apply_error: OrNull(Type.String()),
    os: OrNull(Type.String()),
    agent_version: OrNull(Type.String()),
  },
  { $id: 'StatusSummary', description: "One device's observed status, as a device list shows it." },
);

export const StatusesLineSchema = Type.Object(
  {
    type: Type.Literal('statuses'),
    value: Type.Union([
      Type.Object({ reset: Type.Boolean(), items: Type.Array(StatusSummarySchema), removed: Type.Array(Type.String()) }),
      Type.Object({ reset: Type.Boolean(), gzip: Type.String({ contentEncoding: 'base64' }) }),
    ]),
  },
  {
    $id: 'StatusesLine',
    description:
      'Page streams only: with reset, every device (replace what you hold); else the devices whose status changed and those deleted since the previous line, at most one line a second. Packed as gzip (base64 of the gzip of {items, removed}) from 4 KiB of JSON on.',
  },
);

/** One line of `POST .../page`. */
export const PageLineSchema = Type.Union(
  [DeviceEventSchema, SecurityGroupEventSchema, OrganizationEventSchema, PatchEventSchema, GzipEventSchema, TailEventSchema, BookmarkEventSchema, ErrorEventSchema, ConvergenceUpdateSchema, StatusesLineSchema],
  { $id: 'PageLine', description: 'One line of a page stream: a watch event, the convergence, or statuses (newline-delimited JSON).' },
);

/** True when A and B are the same type (each assignable to the other). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

// Compile-time: the schemas describe exactly the types the SDK and the server use.
const sameLines: [
  Same<Static<typeof DeviceEventSchema>, ChangeEvent<'device'> | DeleteEvent<'device'>>,
  Same<Static<typeof SecurityGroupEventSchema>, ChangeEvent<'security-group'> | DeleteEvent<'security-group'>>,
  Same<Static<typeof OrganizationEventSchema>, ChangeEvent<'organization'> | DeleteEvent<'organization'>>,
  Same<Static<typeof PatchEventSchema>, PatchEvent>,
  Same<Static<typeof GzipEventSchema>, GzipEvent>,
  Same<Static<typeof TailEventSchema>, TailEvent>,
  Same<Static<typeof BookmarkEventSchema>, BookmarkEvent>,
  Same<Static<typeof ErrorEventSchema>, ErrorEvent>,
  Same<Static<typeof WatchEventSchema>, WatchEvent>,
  Same<Static<typeof ConvergenceEventSchema>, ConvergenceEvent>,
  Same<Static<typeof StatusSummarySchema>, StatusSummary>,
  Same<Static<typeof PageLineSchema>, PageLine>,
] = [true, true, true, true, true, true, true, true, true, true, true, true];
void sameLines;
