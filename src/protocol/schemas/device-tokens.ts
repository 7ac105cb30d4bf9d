import { Type, type Static } from '@sinclair/typebox';
import { ListOf, OrNull, Timestamp, Uuid, strict } from './common.js';
import { MAX_EXPIRING_WITHIN_SECONDS } from '../device-tokens.js';

/**
 * `POST /api/organizations/{org}/devices/{id}/token` (the device's own token):
 * a new device token, shown once. The token the call was made with, and any
 * other token of the device, stay valid for at most
 * DEVICE_TOKEN_OVERLAP_SECONDS more (docs/protocol.md "Device tokens over time").
 */
export const DeviceTokenRenewal = Type.Object(
  {
    device_token: Type.String({ description: 'Shown once.' }),
    /** Null when the server sets no device token lifetime (`--device-token-ttl 0`): the call only rotated the token. */
    expires_at: OrNull(Timestamp),
    issued_at: Timestamp,
  },
  { $id: 'DeviceTokenRenewal' },
);

/** A device's token lifetime: the latest expiry among its tokens (null: it never expires). No secret. */
export const DeviceTokenExpiry = Type.Object(
  {
    device_id: Uuid,
    hostname: Type.String(),
    /** In the past: the device's token expired; it must enroll again. */
    expires_at: OrNull(Timestamp),
    /** When that token was issued (at enrollment or at its last renewal). */
    issued_at: OrNull(Timestamp),
  },
  { $id: 'DeviceTokenExpiry' },
);

export const DeviceTokenExpiryList = ListOf(DeviceTokenExpiry, 'DeviceTokenExpiryList');

export const DeviceTokenExpiryQuery = Type.Object(
  {
    expiring_within: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_EXPIRING_WITHIN_SECONDS, description: 'Seconds: only devices whose token expires within this (expired ones included).' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    after: Type.Optional(Uuid),
  },
  strict,
);

export type DeviceTokenRenewal = Static<typeof DeviceTokenRenewal>;
export type DeviceTokenExpiry = Static<typeof DeviceTokenExpiry>;
export type DeviceTokenExpiryList = Static<typeof DeviceTokenExpiryList>;
export type DeviceTokenExpiryQuery = Static<typeof DeviceTokenExpiryQuery>;
