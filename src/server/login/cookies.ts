import type { IncomingHttpHeaders } from 'node:http';
import { COOKIES, HEADERS, SECRET_PREFIX } from '../../protocol/index.js';

/** Longest Cookie header read; browsers send at most a few KB. */
const MAX_COOKIE_HEADER = 8192;

/** The value of cookie `name` in a request's `Cookie` header; undefined when absent. */
export function cookieValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const header = headers[HEADERS.cookie];
  if (typeof header !== 'string' || header.length > MAX_COOKIE_HEADER) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value === '' ? undefined : value;
  }
  return undefined;
}

/** The session token of a browser's `fleetplane_session` cookie (only `fps_` values count). */
export function sessionCookie(headers: IncomingHttpHeaders): string | undefined {
  const value = cookieValue(headers, COOKIES.session);
  return value?.startsWith(SECRET_PREFIX.session) ? value : undefined;
}

/** The token of a browser's `fleetplane_token` cookie (the dashboard's sign-in with a pasted token); the access layer checks what it is. */
export function tokenCookie(headers: IncomingHttpHeaders): string | undefined {
  return cookieValue(headers, COOKIES.token);
}

export interface CookieOptions {
  path: string;
  /** Seconds; 0 clears the cookie. */
  maxAge: number;
  secure: boolean;
}

/** A `Set-Cookie` value: HttpOnly and SameSite=Lax always, Secure as asked. */
export function setCookie(name: string, value: string, o: CookieOptions): string {
  return `${name}=${value}; Path=${o.path}; Max-Age=${Math.max(0, Math.floor(o.maxAge))}; HttpOnly; SameSite=Lax${o.secure ? '; Secure' : ''}`;
}

/**
 * The dashboard's token cookie: HttpOnly and SameSite=Strict (no other site's
 * page or link makes the browser send it), no Max-Age (it ends with the
 * browser session), Secure as asked. `value` '' clears it.
 */
export function setTokenCookie(value: string, secure: boolean): string {
  return `${COOKIES.token}=${value}; Path=/; ${value === '' ? 'Max-Age=0; ' : ''}HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
