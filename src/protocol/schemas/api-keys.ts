import { Type, type Static } from '@sinclair/typebox';
import { ListOf, Timestamp, Uuid, strict } from './common.js';
import { MEMBER_ROLES } from '../members.js';
import { MAX_API_KEY_ORGANIZATIONS, MAX_API_KEY_TTL_SECONDS } from '../api-keys.js';

const Role = Type.Union(MEMBER_ROLES.map((r) => Type.Literal(r)));

/**
 * A personal API key (docs/protocol.md "Personal API keys"): acts as its
 * user, in its organizations only, with at most its role there and at most
 * the user's current role there.
 */
export const ApiKey = Type.Object(
  {
    id: Uuid,
    user_id: Uuid,
    organizations: Type.Array(Uuid),
    role: Role,
    description: Type.String(),
    expires_at: Timestamp,
    created_at: Timestamp,
  },
  { $id: 'ApiKey' },
);
export const ApiKeyList = ListOf(ApiKey, 'ApiKeyList');

export const ApiKeyCreate = Type.Object(
  {
    organizations: Type.Array(Uuid, { minItems: 1, maxItems: MAX_API_KEY_ORGANIZATIONS, uniqueItems: true }),
    role: Role,
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    /** Default: DEFAULT_API_KEY_TTL_SECONDS from now; at most MAX_API_KEY_TTL_SECONDS from now. */
    expires_at: Type.Optional(Timestamp),
  },
  { ...strict, $id: 'ApiKeyCreate' },
);

export const CreatedApiKey = Type.Composite([ApiKey, Type.Object({ key: Type.String({ description: 'Shown once.' }) })], { $id: 'CreatedApiKey' });

export const UserParams = Type.Object({ user: Type.String({ minLength: 1, maxLength: 64, description: 'A user id, or `me`.' }) }, strict);
export const UserIdParams = Type.Object({ user: Type.String({ minLength: 1, maxLength: 64, description: 'A user id, or `me`.' }), id: Uuid }, strict);

export type ApiKey = Static<typeof ApiKey>;
export type ApiKeyList = Static<typeof ApiKeyList>;
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;
export type CreatedApiKey = Static<typeof CreatedApiKey>;
