import { Type, type Static } from '@sinclair/typebox';
import { ListOf, OrNull, Timestamp, Uuid, strict } from './common.js';
import { DEVICE_LOGIN_CLIENTS, MAX_RETURN_TO_LENGTH } from '../auth.js';

/**
 * Users, sessions and login (docs/protocol.md "Users and login"). A user is
 * identified by (issuer, subject); email is an attribute.
 */
export const User = Type.Object(
  {
    id: Uuid,
    issuer: Type.String(),
    subject: Type.String(),
    email: OrNull(Type.String()),
    name: OrNull(Type.String()),
    server_admin: Type.Boolean(),
    created_at: Timestamp,
    last_login_at: OrNull(Timestamp),
  },
  { $id: 'User' },
);

/** A user's session, never its token. */
export const Session = Type.Object(
  {
    id: Uuid,
    user_id: Uuid,
    created_at: Timestamp,
    /** Idle end: each refresh moves it to now + --session-ttl, never past max_expires_at. */
    expires_at: Timestamp,
    /** Absolute end (--session-max-age after the login). */
    max_expires_at: Timestamp,
    /** When it was last created or refreshed (not every request: see docs/protocol.md). */
    last_used_at: OrNull(Timestamp),
    /** The address the login came from. */
    source: OrNull(Type.String()),
    user_agent: OrNull(Type.String()),
    /** `browser`, `ctl` or `agent`. */
    description: Type.String(),
  },
  { $id: 'Session' },
);
export const SessionList = ListOf(Session, 'SessionList');

/** `GET /api/auth/session`: the caller's session and user. */
export const SessionInfo = Type.Object({ session: Session, user: User }, { $id: 'SessionInfo' });

/** `GET /api/auth/methods`: the ways to sign in this server offers (no credential needed to ask). */
export const LoginMethods = Type.Object(
  {
    /** Always true: a token (admin, organization) or a personal API key, pasted into the dashboard or given to ctl. */
    token: Type.Boolean(),
    /** Whether `--oidc-issuer` is set: the browser login and `ctl login` through the identity provider work. */
    oidc: Type.Boolean(),
  },
  { $id: 'LoginMethods' },
);
export type LoginMethods = Static<typeof LoginMethods>;

export const DeviceLoginStart = Type.Object(
  { client: Type.Optional(Type.Union(DEVICE_LOGIN_CLIENTS.map((c) => Type.Literal(c)))) },
  { ...strict, $id: 'DeviceLoginStart' },
);

/** `POST /api/auth/device`: what to show the user (RFC 8628 §3.2), and the handle to poll with. */
export const DeviceLogin = Type.Object(
  {
    /** fleetplane's opaque handle of this login; the issuer's device code never leaves the server. */
    device_login: Type.String(),
    user_code: Type.String(),
    verification_uri: Type.String(),
    verification_uri_complete: Type.Optional(Type.String()),
    /** Seconds until the login expires. */
    expires_in: Type.Integer({ minimum: 1 }),
    /** Seconds to wait between polls. */
    interval: Type.Integer({ minimum: 1 }),
  },
  { $id: 'DeviceLogin' },
);

export const DeviceLoginPoll = Type.Object({ device_login: Type.String({ minLength: 1, maxLength: 200 }) }, { ...strict, $id: 'DeviceLoginPoll' });

/** A login's result: the session token, shown once. */
export const CreatedSession = Type.Object(
  { token: Type.String({ description: 'The session token (fps_…), shown once.' }), session: Session, user: User },
  { $id: 'CreatedSession' },
);

export const OidcLoginQuery = Type.Object(
  {
    /** A path on this server (one leading `/`), default `/`. */
    return_to: Type.Optional(Type.String({ maxLength: MAX_RETURN_TO_LENGTH })),
    login_hint: Type.Optional(Type.String({ maxLength: 320 })),
  },
  strict,
);

/** The issuer's redirect: anything it sends is read, nothing else refused. */
export const OidcCallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 1024 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 4096 })),
    error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
    session_state: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: true },
);

/** The body of `POST /api/auth/token_session`: the token the dashboard signs in with. */
export const TokenSessionCreate = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false, $id: 'TokenSessionCreate' },
);
export type TokenSessionCreate = Static<typeof TokenSessionCreate>;

export type User = Static<typeof User>;
export type Session = Static<typeof Session>;
export type SessionList = Static<typeof SessionList>;
export type SessionInfo = Static<typeof SessionInfo>;
export type DeviceLoginStart = Static<typeof DeviceLoginStart>;
export type DeviceLogin = Static<typeof DeviceLogin>;
export type DeviceLoginPoll = Static<typeof DeviceLoginPoll>;
export type CreatedSession = Static<typeof CreatedSession>;
