import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import type { ConnectionLimiter } from './connection-limits.js';

/**
 * How often node:http looks for requests past their headers timeout: it
 * checks on a timer (30 s by default), so a trickling client holds its
 * connection for the timeout plus up to one interval. A fifth of the
 * timeout, at most a second, keeps that within a fifth more than the
 * setting; each check visits only connections whose request is arriving.
 */
export function connectionsCheckingIntervalMs(headersTimeoutMs: number): number {
  return Math.max(10, Math.min(1_000, Math.floor(headersTimeoutMs / 5)));
}

/** node:http's options for the public listener. */
export function httpListenerOptions(settings: Settings, connections: ConnectionLimiter): ServerOptions {
  const headersTimeout = Math.max(1, Math.round(settings.headersTimeout * 1000));
  return {
    headersTimeout,
    connectionsCheckingInterval: connectionsCheckingIntervalMs(headersTimeout),
    // Off, as Fastify has it: bodies have their own timeout (--body-timeout), which starts after authentication.
    requestTimeout: 0,
    // So that the limiter sees when a request's headers are complete, upgrades included.
    IncomingMessage: connections.IncomingMessage,
  };
}

/** What node:https takes besides the certificate and httpListenerOptions(). */
export function tlsListenerOptions(settings: Settings): { handshakeTimeout: number; allowHalfOpen: boolean } {
  return {
    // The handshake comes before the headers and is as cheap to drag out: the same bound (Node's default is 120 s).
    handshakeTimeout: Math.max(1, Math.round(settings.headersTimeout * 1000)),
    // node:https leaves its TCP sockets closing their side at the client's end of input, before any answer (node:http keeps them open).
    allowHalfOpen: true,
  };
}

/**
 * How long the answer to a request may take once its client ended its side
 * of the connection. A client that closed the connection altogether looks
 * the same until something is written to it, so past this the connection is
 * closed: a request parked for a long wait (an agent call waiting for its
 * device) is then given up as it was before. As long as a stop gives the
 * requests in flight (server.ts).
 */
export const HALF_CLOSED_ANSWER_GRACE_MS = 5_000;

function onClientEnd(this: Socket): void {
  if (this.destroyed) return;
  const timer = setTimeout(() => this.destroy(), HALF_CLOSED_ANSWER_GRACE_MS);
  timer.unref();
  this.once('close', () => clearTimeout(timer));
}

/**
 * A client may end its side of the connection once it sent its request
 * (`shutdown(SHUT_WR)`, `socket.end()`) and still read the answer (RFC 9112
 * section 9.6). node:http closes the connection at the client's end unless
 * `httpAllowHalfOpen` is set: a request that was still being served then
 * got no answer at all. With it, node:http closes the connection after the
 * answer to the last request received (at once when none is pending), and
 * at the latest HALF_CLOSED_ANSWER_GRACE_MS after the client's end.
 */
export function answerHalfClosedRequests(server: Server, logger: Logger): void {
  const halfOpen = server as Server & { httpAllowHalfOpen?: unknown };
  if (typeof halfOpen.httpAllowHalfOpen !== 'boolean') {
    logger.warn({ node: process.version }, "this Node's HTTP server has no httpAllowHalfOpen: a request whose client half-closes its connection gets no answer");
    return;
  }
  halfOpen.httpAllowHalfOpen = true;
  // With TLS, node:http serves the TLS socket, whose end is the client's.
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => socket.once('end', onClientEnd));
}
