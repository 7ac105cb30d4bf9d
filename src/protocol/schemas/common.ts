import { Type, type SchemaOptions, type Static, type TInteger, type TObject, type TSchema, type TString, type TUnsafe } from '@sinclair/typebox';
import { ERROR_CODES, type ErrorCode } from '../errors.js';

export const Uuid = Type.String({ format: 'uuid', description: 'Lower-case UUID.' });
export const Revision = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
export const Timestamp = Type.String({ format: 'date-time' });
export const Cidr = Type.String({ format: 'cidr' });
export const Ip = Type.String({ format: 'ip' });

/** Objects on the wire reject fields they don't define. */
export const strict = { additionalProperties: false } as const;

/**
 * `schema` or null: the one notation of nullable fields on the wire, a JSON
 * Schema type list (`"type": ["string", "null"]`), not anyOf. A validator
 * walks anyOf's branches in turn and builds an error object for each branch
 * that fails, so every non-null value left garbage behind: a fleet's status
 * reports made it per ACK. A type list is one check, and a coercing
 * validator coerces only when no listed type matches, so null stays null.
 */
export function OrNull<T extends TString | TInteger | TObject>(schema: T, options: SchemaOptions = {}): TUnsafe<Static<T> | null> {
  // Own string keys only: TypeBox's kind symbol would make the result a plain string or integer to TypeBox.
  const plain: Record<string, unknown> = Object.fromEntries(Object.entries(schema));
  return Type.Unsafe<Static<T> | null>({ ...plain, ...options, type: [plain.type, 'null'] });
}

export const OrgParams = Type.Object({ org: Uuid }, strict);
export const OrgIdParams = Type.Object({ org: Uuid, id: Uuid }, strict);

export const Tombstone = Type.Object(
  { id: Uuid, revision: Revision, deleted: Type.Literal(true) },
  { $id: 'Tombstone', description: 'An item deleted after the requested revision.' },
);
export type Tombstone = Static<typeof Tombstone>;

/**
 * `{items, next?}` — the list envelope (docs/protocol.md "Lists"). `$id`
 * names it in the OpenAPI document (`#/components/schemas/<$id>`).
 */
export function ListOf<T extends TSchema>(item: T, $id?: string) {
  return Type.Object(
    {
      items: Type.Array(item),
      next: Type.Optional(Type.String({ description: 'Cursor for the next page; absent on the last page.' })),
    },
    $id === undefined ? {} : { $id },
  );
}

/** Lists with `gt_revision` or a cursor may carry tombstones. */
export function ChangeListOf<T extends TSchema>(item: T, $id?: string) {
  return ListOf(Type.Union([item, Tombstone]), $id);
}

export const ListQuery = Type.Object(
  {
    gt_revision: Type.Optional(Revision),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  strict,
);

/** A code of the error catalog (ERRORS). */
export const ErrorCodeSchema = Type.Unsafe<ErrorCode>({
  $id: 'ErrorCode',
  type: 'string',
  enum: [...ERROR_CODES],
  description: 'A code of the error catalog (docs/protocol.md "Errors").',
});

/** Body of every non-2xx response (ErrorBody). */
export const ErrorResponse = Type.Object(
  {
    error: Type.Object({
      code: ErrorCodeSchema,
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'For validation errors: the JSON path of the bad field and what was expected.' })),
    }),
  },
  { $id: 'ErrorResponse' },
);
