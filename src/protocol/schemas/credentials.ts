import { Type, type Static } from '@sinclair/typebox';
import { OrNull, Timestamp, Uuid, strict } from './common.js';

export const TOKEN_ROLES = ['admin', 'read'] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

export const OrgToken = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  role: Type.Union(TOKEN_ROLES.map((r) => Type.Literal(r))),
  description: Type.String(),
  expires_at: OrNull(Timestamp),
  created_at: Timestamp,
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
  expires_at: OrNull(Timestamp),
  used: Type.Boolean(),
  created_at: Timestamp,
}, { $id: 'RegistrationKey' });

export const RegistrationKeyList = Type.Object({ items: Type.Array(RegistrationKey) }, { $id: 'RegistrationKeyList' });

export const RegistrationKeyCreate = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    single_use: Type.Optional(Type.Boolean()),
    ephemeral: Type.Optional(Type.Boolean()),
    expires_at: Type.Optional(OrNull(Timestamp)),
  },
  { ...strict, $id: 'RegistrationKeyCreate' },
);

export const CreatedRegistrationKey = Type.Composite(
  [RegistrationKey, Type.Object({ key: Type.String({ description: 'Shown once.' }) })],
  { $id: 'CreatedRegistrationKey' },
);

export type OrgToken = Static<typeof OrgToken>;
export type OrgTokenCreate = Static<typeof OrgTokenCreate>;
export type CreatedOrgToken = Static<typeof CreatedOrgToken>;
export type RegistrationKey = Static<typeof RegistrationKey>;
export type RegistrationKeyCreate = Static<typeof RegistrationKeyCreate>;
export type CreatedRegistrationKey = Static<typeof CreatedRegistrationKey>;

/** Prefixes make a leaked secret recognisable in logs and secret scanners. */
export const SECRET_PREFIX = {
  admin: 'fpa_',
  orgToken: 'fpt_',
  deviceToken: 'fpd_',
  registrationKey: 'fpr_',
  /** A user's personal API key. */
  apiKey: 'fpk_',
  /** A user's session (a browser login's cookie, `ctl login`). */
  session: 'fps_',
} as const;
