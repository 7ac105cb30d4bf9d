import type { FastifyRequest } from 'fastify';
import { isLoopbackHost } from '../../util/loopback.js';

/**
 * This server's origin (`scheme://host[:port]`) as browsers reach it:
 * `--public-url` when set (needed behind a TLS-terminating proxy), else the
 * request's own scheme and Host header. A forged Host can only produce a
 * redirect URI the issuer has not registered, or an origin check the
 * forger's own browser fails.
 */
export function serverOrigin(req: FastifyRequest, publicUrl: string | undefined): string {
  if (publicUrl !== undefined) return publicUrl.replace(/\/$/, '');
  return `${req.protocol}://${req.host}`;
}

/**
 * Whether cookies are sent with `Secure`: always, except when the server's
 * origin is plain `http` on a loopback host (development: browsers would
 * otherwise drop them). Over plain http beyond loopback they are Secure,
 * so a browser never sends them in clear text.
 */
export function secureCookies(origin: string): boolean {
  const url = new URL(origin);
  return !(url.protocol === 'http:' && isLoopbackHost(url.hostname));
}
