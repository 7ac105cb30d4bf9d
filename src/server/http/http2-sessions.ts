import { Server as HttpServer } from 'node:http';
import type { Http2Session } from 'node:http2';
import type { Server } from 'node:net';
import type { Gauge } from 'prom-client';

/** The HTTP/2 sessions of each server built for TLS, until each closes. */
const sessionsOf = new WeakMap<Server, Set<Http2Session>>();

/** Keeps track of the HTTP/2 sessions of `server` (a node:http2 server), for closeAllConnections(), and counts them in `open`. */
export function trackHttp2Sessions(server: Server, open: Gauge): void {
  if (sessionsOf.has(server)) return;
  const sessions = new Set<Http2Session>();
  sessionsOf.set(server, sessions);
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    open.set(sessions.size);
    session.once('close', () => {
      sessions.delete(session);
      open.set(sessions.size);
    });
  });
}

/**
 * Cuts every connection of the public listener, whatever it is serving:
 * node:http's `closeAllConnections` for its HTTP/1.1 connections (node:http2
 * serves those with node:http's code, and keeps the same list), and every
 * HTTP/2 session, with its streams.
 */
export function closeAllConnections(server: Server): void {
  const own: unknown = Reflect.get(server, 'closeAllConnections');
  Reflect.apply(typeof own === 'function' ? own : HttpServer.prototype.closeAllConnections, server, []);
  for (const session of sessionsOf.get(server) ?? []) session.destroy();
}

/**
 * Sends every HTTP/2 session GOAWAY: the requests already on it are
 * answered, no other starts, and it closes once the last is (at once when
 * none is). What `Connection: close` on each answer does for HTTP/1.1.
 */
export function closeHttp2Sessions(server: Server): void {
  for (const session of sessionsOf.get(server) ?? []) if (!session.closed) session.close();
}
