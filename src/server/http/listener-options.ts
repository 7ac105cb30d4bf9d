import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
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

/** `--headers-timeout` in milliseconds, as node:http and node:tls take it. */
function headersTimeoutMs(settings: Settings): number {
  return Math.max(1, Math.round(settings.headersTimeout * 1000));
}

/** The limits of the public listener's HTTP/1.1 connections, whichever server serves them. */
function http1Limits(settings: Settings): { headersTimeout: number; connectionsCheckingInterval: number; requestTimeout: number } {
  const headersTimeout = headersTimeoutMs(settings);
  return {
    headersTimeout,
    connectionsCheckingInterval: connectionsCheckingIntervalMs(headersTimeout),
    // Off, as Fastify has it: bodies have their own timeout (--body-timeout), which starts after authentication.
    requestTimeout: 0,
  };
}

/** node:http's options for the public listener. */
export function httpListenerOptions(settings: Settings, connections: ConnectionLimiter): ServerOptions {
  // IncomingMessage: so that the limiter sees when a request's headers are complete, upgrades included.
  return { ...http1Limits(settings), IncomingMessage: connections.IncomingMessage };
}

/**
 * Streams a browser may open at once on one HTTP/2 connection (the
 * SETTINGS it is sent; nginx and Go's server send about as many). Each
 * stream costs the server what a request does, and one connection takes no
 * more than this of them.
 */
export const HTTP2_MAX_CONCURRENT_STREAMS = 128;

/**
 * node:http2's options for the public listener with TLS: HTTP/2 for clients
 * that offer it (ALPN `h2`: browsers, so that every tab of one shares a
 * connection), and HTTP/1.1 on the same port for every other client, with
 * httpListenerOptions()'s limits and request class (node:http2 serves those
 * connections with node:http's own code).
 */
export function http2ListenerOptions(connections: ConnectionLimiter): { allowHTTP1: true; Http1IncomingMessage: typeof IncomingMessage; settings: { maxConcurrentStreams: number } } {
  return { allowHTTP1: true, Http1IncomingMessage: connections.IncomingMessage, settings: { maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS } };
}

/**
 * node:http2 takes the HTTP/1.1 limits of its connections as the server's
 * properties, not as options (and defaults them to node:http's, which are
 * not ours): set them before it listens, when it starts checking them.
 */
export function applyHttp1Timeouts(server: object, settings: Settings): void {
  // Fastify sets the keep-alive timeout (72 s, docs/protocol.md) on the servers it makes for HTTP/1.1 only.
  Object.assign(server, { ...http1Limits(settings), keepAliveTimeout: HTTP1_KEEP_ALIVE_TIMEOUT_MS });
}

/** How long a kept-alive HTTP/1.1 connection may wait for its next request: Fastify's default, which the plain listener has. */
export const HTTP1_KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** What node:https takes besides the certificate and httpListenerOptions(). */
export function tlsListenerOptions(settings: Settings): { handshakeTimeout: number; allowHalfOpen: boolean } {
  return {
    // The handshake comes before the headers and is as cheap to drag out: the same bound (Node's default is 120 s).
    handshakeTimeout: headersTimeoutMs(settings),
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

function endSocket(this: Socket): void {
  this.end();
}

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
  // node:http2 sets none, and serves its HTTP/1.1 connections with node:http's code, which reads it.
  const http2 = server instanceof TlsServer && 'updateSettings' in server;
  if (typeof halfOpen.httpAllowHalfOpen !== 'boolean' && !http2) {
    logger.warn({ node: process.version }, "this Node's HTTP server has no httpAllowHalfOpen: a request whose client half-closes its connection gets no answer");
    return;
  }
  halfOpen.httpAllowHalfOpen = true;
  // With TLS, node:http serves the TLS socket, whose end is the client's. An HTTP/2 client ends its connection
  // when it is done with it (RFC 9113 section 9.1): node:http2 doesn't close on it, and its streams would stay.
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket | TLSSocket) => {
    socket.once('end', 'alpnProtocol' in socket && socket.alpnProtocol === 'h2' ? endSocket : onClientEnd);
  });
}
