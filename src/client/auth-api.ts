import {
  paths,
  type CreatedSession,
  type DeviceLogin,
  type DeviceLoginClient,
  type LoginMethods,
  type Session,
  type SessionInfo,
} from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { FleetplaneError, LoginError } from './errors.js';
import { isRecord, listOf } from './guards.js';
import type { HttpTransport } from './http-transport.js';
import { retryAfterWait } from '../util/backoff.js';
import { sleep } from '../util/sleep.js';

const isLoginMethods = (v: unknown): v is LoginMethods => isRecord(v) && typeof v['token'] === 'boolean' && typeof v['oidc'] === 'boolean';
const isSession = (v: unknown): v is Session => isRecord(v) && typeof v['id'] === 'string' && typeof v['expires_at'] === 'string';
const isCreated = (v: unknown): v is CreatedSession => isRecord(v) && typeof v['token'] === 'string' && isSession(v['session']) && isRecord(v['user']);
const isInfo = (v: unknown): v is SessionInfo => isRecord(v) && isSession(v['session']) && isRecord(v['user']);
const isDeviceLogin = (v: unknown): v is DeviceLogin =>
  isRecord(v) && typeof v['device_login'] === 'string' && typeof v['user_code'] === 'string' && typeof v['verification_uri'] === 'string' && typeof v['interval'] === 'number';

/** RFC 8628 §3.5: what `slow_down` adds to the interval, for good. */
const SLOW_DOWN_STEP_MS = 5_000;

export interface DeviceLoginOptions extends CallOptions {
  /** Who logs in (the session's description). Default `ctl`. */
  client?: DeviceLoginClient;
  /** Called once with the code to show the user, before the first poll. */
  onCode(login: DeviceLogin): void;
  /** Called after every poll that is not the end: `pending` or `slow_down` (with the new interval). */
  onPoll?(status: 'pending' | 'slow_down', intervalMs: number): void;
}

/** Where to sign in and which code to enter, for people (`ctl login` and `agent --login` print it on stderr): where to go and which code to enter. */
export function deviceLoginPrompt(login: DeviceLogin): string {
  const lines = [`To sign in, open ${login.verification_uri} and enter the code ${login.user_code}`];
  if (login.verification_uri_complete !== undefined) lines.push(`(or open ${login.verification_uri_complete})`);
  lines.push(`Waiting for approval (the code expires in ${Math.round(login.expires_in / 60)} min)...`);
  return `${lines.join('\n')}\n`;
}

/**
 * Login and sessions (docs/protocol.md "Users and login"). The login routes
 * take no credential; the session routes take the session token as the bearer.
 */
export class AuthApi {
  constructor(private readonly transport: HttpTransport) {}

  /** `POST /api/auth/device`: starts a device login. NotFoundError when the server has no user login. */
  startDeviceLogin(client: DeviceLoginClient = 'ctl', opts: CallOptions = {}): Promise<DeviceLogin> {
    return this.transport.json({ method: 'POST', path: paths.authDevice(), body: { client }, signal: opts.signal }, isDeviceLogin, 'a device login');
  }

  /** `POST /api/auth/device/token`: one poll. LoginError `authorization_pending`/`slow_down` until approved. */
  pollDeviceLogin(deviceLogin: string, opts: CallOptions = {}): Promise<CreatedSession> {
    return this.transport.json({ method: 'POST', path: paths.authDeviceToken(), body: { device_login: deviceLogin }, signal: opts.signal }, isCreated, 'a session');
  }

  /**
   * The whole device login: starts it, shows the code (`onCode`), polls at
   * the interval (+5 s for good on each `slow_down`; a 503 waits its
   * Retry-After) until the user approves. Rejects with LoginError
   * (`access_denied`, `expired_token`, `sign_in_refused`, `login_failed`), or
   * the signal's reason.
   */
  async deviceLogin(opts: DeviceLoginOptions): Promise<CreatedSession> {
    const login = await this.startDeviceLogin(opts.client ?? 'ctl', opts);
    opts.onCode(login);
    let intervalMs = login.interval * 1000;
    for (;;) {
      if (!(await sleep(intervalMs, opts.signal))) throw opts.signal?.reason ?? new Error('aborted');
      try {
        return await this.pollDeviceLogin(login.device_login, opts);
      } catch (err) {
        if (err instanceof LoginError && err.code === 'authorization_pending') {
          opts.onPoll?.('pending', intervalMs);
        } else if (err instanceof LoginError && err.code === 'slow_down') {
          intervalMs += SLOW_DOWN_STEP_MS;
          opts.onPoll?.('slow_down', intervalMs);
        } else if (err instanceof FleetplaneError && err.code === 'unavailable') {
          await sleep(err.retryAfterMs === undefined ? intervalMs : retryAfterWait(err.retryAfterMs), opts.signal);
        } else {
          throw err;
        }
      }
    }
  }

  /** `GET /api/auth/session`: the caller's session and user. */
  session(opts: CallOptions = {}): Promise<SessionInfo> {
    return this.transport.json({ method: 'GET', path: paths.authSession(), signal: opts.signal }, isInfo, 'a session and its user');
  }

  /** `POST /api/auth/session/refresh`: extends the caller's session (never past its max_expires_at). */
  refresh(opts: CallOptions = {}): Promise<Session> {
    return this.transport.json({ method: 'POST', path: paths.authSessionRefresh(), signal: opts.signal }, isSession, 'a session');
  }

  /** `POST /api/auth/logout`: revokes the caller's session. */
  /**
   * In a browser: signs it in with an admin token, an organization token or
   * a personal API key, which the server keeps in an HttpOnly cookie (page
   * scripts never hold it); every later call of the page's client carries
   * it. 401 for an unknown token, 403 for a device token or registration key.
   */
  async signInWithToken(token: string, opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'POST', path: paths.authTokenSession(), body: { token }, signal: opts.signal });
  }

  /** In a browser: clears the token cookie of `signInWithToken` (the token itself stays valid). */
  /** `GET /api/auth/methods`: how one may sign in (no credential needed). */
  loginMethods(opts: CallOptions = {}): Promise<LoginMethods> {
    return this.transport.json({ method: 'GET', path: paths.authMethods(), signal: opts.signal }, isLoginMethods, 'the login methods');
  }

  async signOutToken(opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.authTokenSession(), signal: opts.signal });
  }

  async logout(opts: CallOptions & { token?: string } = {}): Promise<void> {
    await this.transport.empty({ method: 'POST', path: paths.authLogout(), token: opts.token, signal: opts.signal });
  }

  /** `GET /api/users/{user}/sessions` (`me`: the caller's own). */
  async listSessions(user = 'me', opts: CallOptions = {}): Promise<Session[]> {
    const body = await this.transport.json({ method: 'GET', path: paths.userSessions(user), signal: opts.signal }, listOf(isSession), 'a list of sessions');
    return body.items;
  }

  /** `DELETE /api/users/{user}/sessions/{id}`. */
  async revokeSession(user: string, id: string, opts: CallOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.userSession(user, id), signal: opts.signal });
  }
}
