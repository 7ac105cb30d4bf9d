import { Type, type Static } from '@sinclair/typebox';
import { RELAY_LIST_EVENT, type RelayEntry, type RelayList } from '../relay.js';
import { QUERY } from '../paths.js';
import { OrNull, Timestamp, strict } from './common.js';
import { ErrorEventSchema } from './watch-events.js';

/*
 * The relay list (docs/protocol.md "Relays") as schemas, for validation and
 * the OpenAPI document. The TypeScript types in relay.ts are the ones code
 * uses; the check at the end keeps the two equal.
 */

export const RelayEntrySchema = Type.Object(
  {
    id: Type.String({ description: "The replica's id." }),
    url: OrNull(Type.String(), { description: "Base URL of the replica's relay (`--relay-url`); null: the server this list was read from." }),
    expires_at: Timestamp,
  },
  { ...strict, $id: 'RelayEntry', description: 'A replica whose relay is on, with its lease: the entry is gone once the lease expires.' },
);

export const RelayListSchema = Type.Object(
  { items: Type.Array(RelayEntrySchema) },
  { ...strict, $id: 'RelayList', description: 'The live replicas whose relay is on, oldest first.' },
);

export const RelayListUpdateSchema = Type.Object(
  { type: Type.Literal(RELAY_LIST_EVENT), value: RelayListSchema },
  { $id: 'RelayListUpdate', description: 'The relay list: first at once, then on every change, and again after each bookmark interval.' },
);

/** One line of `GET /api/relays?watch=true`. */
export const RelayListEventSchema = Type.Union([RelayListUpdateSchema, ErrorEventSchema], {
  $id: 'RelayListEvent',
  description: 'One line of a relay list stream (newline-delimited JSON).',
});

export const RelayListQuery = Type.Object(
  { [QUERY.watch]: Type.Optional(Type.Boolean({ description: 'Follow the relay list: an NDJSON stream of relay list lines.' })) },
  { additionalProperties: false },
);

/** True when A and B are the same type (each assignable to the other). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

// Compile-time: the schemas describe exactly the types clients and the server use.
const sameRelayTypes: [Same<Static<typeof RelayEntrySchema>, RelayEntry>, Same<Static<typeof RelayListSchema>, RelayList>] = [true, true];
void sameRelayTypes;
