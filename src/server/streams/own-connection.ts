import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Logger } from 'pino';

type Listener = (...args: unknown[]) => void;

/**
 * node:http's own listeners on a connection it serves (lib/_http_server.js),
 * by event; each is there on every connection it serves. Should a Node
 * release name them otherwise, the connection is left to node:http: freeing
 * the parser under a 'data' listener that still feeds it would be worse
 * than keeping it.
 */
const HTTP_LISTENERS: Readonly<Record<string, string>> = {
  data: 'bound socketOnData',
  end: 'bound socketOnEnd',
  close: 'bound socketOnClose',
  drain: 'bound socketOnDrain',
  error: 'socketOnError',
  timeout: 'socketOnTimeout',
  resume: 'onSocketResume',
  pause: 'onSocketPause',
};

/** Per-connection wrappers node:http installs to watch for 'data' listeners (replaced by net.Socket's own once it has no parser). */
const WRAPPED_METHODS = ['on', 'addListener', 'prependListener'] as const;

type FreeParser = (parser: unknown, req: unknown, socket: unknown) => void;

/**
 * node:http's `freeParser`: what node itself calls when it hands an upgraded
 * connection to its 'upgrade' listener. Not a documented API, hence looked
 * up, not assumed.
 */
function loadFreeParser(): FreeParser | undefined {
  try {
    const common: unknown = createRequire(import.meta.url)('node:_http_common');
    if (typeof common !== 'object' || common === null || !('freeParser' in common)) return undefined;
    const free = common.freeParser;
    return typeof free === 'function' ? (free as FreeParser) : undefined;
  } catch {
    return undefined;
  }
}

const freeParser = loadFreeParser();
let fallbackLogged = false;

interface HttpSocket extends Socket {
  parser?: unknown;
  _httpMessage?: unknown;
}

/**
 * Takes a hijacked request's connection out of node:http for the rest of its
 * life, the way node hands an upgraded connection to its 'upgrade' listener:
 * the HTTP server stops parsing it, forgets its request and response (and
 * what Fastify hung on them), and no longer tracks it for its timeouts or
 * `closeIdleConnections`. What that frees is about 4 KB of JavaScript heap
 * and the parser's 1.75 KB of native memory per connection, which a server
 * holding one long-lived stream per agent pays 10,000 times.
 *
 * The contract for the caller, from then on:
 * - it owns the socket until it closes, and must listen for 'error';
 * - the connection carries no further request: bytes the client sends are
 *   read and dropped, and its close is still seen at once;
 * - a client that half-closes gets its end too (node:http does the same).
 *
 * Returns false, and leaves the connection to node:http (correct, only
 * dearer), when this Node's internals are not the ones expected; that is
 * logged once per process.
 */
export function ownConnection(req: IncomingMessage, res: ServerResponse, logger: Logger): boolean {
  const socket: HttpSocket = req.socket;
  if (socket.destroyed) return true;
  const found = freeParser && socket.parser !== undefined && socket._httpMessage === res ? httpListeners(socket) : undefined;
  if (!freeParser || !found) {
    if (!fallbackLogged) {
      fallbackLogged = true;
      logger.warn(
        { node: process.version },
        "this Node's HTTP internals are not the ones expected: long-lived streams stay with node:http (about 6 KB more memory each)",
      );
    }
    return false;
  }
  for (const [event, listener] of found) socket.removeListener(event, listener);
  freeParser(socket.parser, req, socket);
  res.detachSocket(socket);
  // Put back as node does once a socket has no parser: `delete` would turn the socket into a dictionary-mode
  // object, and every property read of every later write would miss V8's inline caches (about a third of the
  // CPU per delivery of a fan-out, bench `fanout`).
  const own = socket as unknown as Record<string, unknown>;
  const proto = Socket.prototype as unknown as Record<string, unknown>;
  for (const method of WRAPPED_METHODS) own[method] = proto[method];
  // The socket keeps flowing without node:http's 'data' listener: what a client sends after its request is
  // read and dropped, and its close is seen at once, with nothing to write.
  socket.on('end', endSocket);
  return true;
}

/** node:http's listeners on `socket`, or undefined unless every one of them is there. */
function httpListeners(socket: Socket): [string, Listener][] | undefined {
  const found: [string, Listener][] = [];
  for (const [event, name] of Object.entries(HTTP_LISTENERS)) {
    const mine = (socket.listeners(event) as Listener[]).filter((l) => l.name === name);
    const [listener] = mine;
    if (mine.length !== 1 || !listener) return undefined;
    found.push([event, listener]);
  }
  return found;
}

function endSocket(this: Socket): void {
  this.end();
}
