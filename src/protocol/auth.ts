/** Login and session limits, and cookie names (docs/protocol.md "Users and login"); their schemas are in schemas/auth.ts. */

/** Who starts a device login (the session's description). */
export const DEVICE_LOGIN_CLIENTS = ['ctl', 'agent'] as const;
export type DeviceLoginClient = (typeof DEVICE_LOGIN_CLIENTS)[number];

/** Longest `return_to` accepted. */
export const MAX_RETURN_TO_LENGTH = 2048;

/** Pending logins (browser and device) one source address may have at once; past it, 429. */
export const MAX_PENDING_LOGINS_PER_SOURCE = 20;
/** Pending logins in all; past it, 429. */
export const MAX_PENDING_LOGINS = 10_000;
/** A pending browser login's lifetime, seconds. */
export const PENDING_LOGIN_TTL_SECONDS = 600;
/** Live sessions one user may hold; a login past it revokes the user's oldest sessions. */
export const MAX_SESSIONS_PER_USER = 50;

/** The path of the `fleetplane_login` cookie: sent back on the callback only. */
export const LOGIN_COOKIE_PATH = '/api/auth/oidc';

/** Cookie names (docs/protocol.md "Users and login"). */
export const COOKIES = {
  /** The browser's session token. */
  session: 'fleetplane_session',
  /** A pending browser login's handle, between the login and its callback. */
  login: 'fleetplane_login',
  /** A token pasted into the dashboard (admin, organization token or personal API key), kept where page scripts can't read it. */
  token: 'fleetplane_token',
} as const;
