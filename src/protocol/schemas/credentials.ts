import { Type, type Static } from '@sinclair/typebox';
import { OrNull, Timestamp, Uuid, strict } from './common.js';
import { Tags } from './device.js';
import { MAKER_KINDS, TOKEN_ROLES, type MakerKind } from '../credentials.js';

export const CreatedBy = Type.Object(
  {
    credential_kind: Type.Unsafe<MakerKind | null>({
      type: ['string', 'null'],
      enum: [...MAKER_KINDS, null],
      description: 'What made it (see MAKER_KINDS); null: made before makers were recorded, and unknown.',
    }),
    credential_id: OrNull(Uuid, { description: 'The organization token, session or API key that made it; null for the admin token and a user.' }),
    user_id: OrNull(Uuid, { description: 'The user whose authority it rests on: removed from the organization, or demoted to read, it is revoked.' }),
  },
  { ...strict, $id: 'CreatedBy' },
);

export const OrgToken = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  role: Type.Union(TOKEN_ROLES.map((r) => Type.Literal(r))),
  description: Type.String(),
  expires_at: OrNull(Timestamp),
  created_at: Timestamp,
  created_by: CreatedBy,
}, { $id: 'OrgToken' });

export const OrgTokenList = Type.Object({ items: Type.Array(OrgToken) }, { $id: 'OrgTokenList' });

export const OrgTokenCreate = Type.Object(
  {
    role: Type.Union(TOKEN_ROLES.map((r) => Type.Literal(r))),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    expires_at: Type.Optional(OrNull(Timestamp)),
  },
  { ...strict, $id: 'OrgTokenCreate' },
);

export const CreatedOrgToken = Type.Composite([OrgToken, Type.Object({ token: Type.String({ description: 'Shown once.' }) })], { $id: 'CreatedOrgToken' });

export const RegistrationKey = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  description: Type.String(),
  single_use: Type.Boolean(),
  ephemeral: Type.Boolean({ description: 'Devices it enrolls are ephemeral: deleted once offline longer than --ephemeral-offline-timeout.' }),
  tags: Type.Array(Type.String(), { description: 'The tags of the devices it enrolls (sorted, without repeats).' }),
  expires_at: OrNull(Timestamp),
  used: Type.Boolean(),
  created_at: Timestamp,
  created_by: CreatedBy,
}, { $id: 'RegistrationKey' });

/**
 * `GET /api/registration_key`: the key given as the bearer token, and the
 * name of the organization it enrolls in (since v1.20), so an agent told
 * `--org NAME` can check the key is for it without any other credential.
 */
export const OwnRegistrationKey = Type.Composite(
  [RegistrationKey, Type.Object({ organization_name: Type.String({ description: "The name of the key's organization (organization_id's), as it is now." }) })],
  { $id: 'OwnRegistrationKey' },
);

export const RegistrationKeyList = Type.Object({ items: Type.Array(RegistrationKey) }, { $id: 'RegistrationKeyList' });

export const RegistrationKeyCreate = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    single_use: Type.Optional(Type.Boolean()),
    ephemeral: Type.Optional(Type.Boolean()),
    tags: Type.Optional(Tags),
    expires_at: Type.Optional(
      OrNull(Timestamp, {
        description: 'Default: --registration-key-ttl from now; at most --registration-key-max-ttl from now; null (never) only when the server sets no maximum.',
      }),
    ),
  },
  { ...strict, $id: 'RegistrationKeyCreate' },
);

export const CreatedRegistrationKey = Type.Composite(
  [RegistrationKey, Type.Object({ key: Type.String({ description: 'Shown once.' }) })],
  { $id: 'CreatedRegistrationKey' },
);

export type CreatedBy = Static<typeof CreatedBy>;
export type OrgToken = Static<typeof OrgToken>;
export type OrgTokenCreate = Static<typeof OrgTokenCreate>;
export type CreatedOrgToken = Static<typeof CreatedOrgToken>;
export type RegistrationKey = Static<typeof RegistrationKey>;
export type RegistrationKeyCreate = Static<typeof RegistrationKeyCreate>;
export type CreatedRegistrationKey = Static<typeof CreatedRegistrationKey>;
export type OwnRegistrationKey = Static<typeof OwnRegistrationKey>;
