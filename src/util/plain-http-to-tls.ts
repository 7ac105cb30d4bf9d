/**
 * A server that speaks HTTPS, asked in plain HTTP (`http://` for an
 * `https://` server): Node's TLS server closes such a connection without a
 * word, which fetch reports as `other side closed` (undici) or `socket hang
 * up` (node:http). `fleetplane ctl`, `sync` and `agent` say instead that the
 * server speaks HTTPS and which URL to use.
 */
import { isIP } from 'node:net';
import { connect } from 'node:tls';

/** How long the check for TLS may take: it only runs once a request has failed. */
const PROBE_TIMEOUT_MS = 3_000;

/** What fetch's cause says when the server closed the connection without answering. */
const CLOSED_UNANSWERED = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

/**
 * A plain-HTTP request failed because the server speaks HTTPS on that port.
 * `httpsUrl`: the same origin with `https:` (port kept), what to use instead.
 * `cause`: the failure fetch reported.
 */
export class PlainHttpToTlsError extends Error {
  override readonly name = 'PlainHttpToTlsError';

  constructor(
    readonly httpUrl: string,
    readonly httpsUrl: string,
    options: { cause: unknown },
  ) {
    super(`the server at ${httpUrl} speaks HTTPS, not plain HTTP: use ${httpsUrl}`, options);
  }
}

/** True when `err`, or an error along its `cause` (8 deep at most), is a PlainHttpToTlsError. */
export function isPlainHttpToTls(err: unknown): boolean {
  let at: unknown = err;
  for (let depth = 0; depth < 8 && at instanceof Error; depth++, at = at.cause) if (at instanceof PlainHttpToTlsError) return true;
  return false;
}

/** True when the error along `cause` says the connection was closed without an answer. */
function closedUnanswered(err: unknown): boolean {
  let at: unknown = err;
  for (let depth = 0; depth < 8 && at instanceof Error; depth++, at = at.cause) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && CLOSED_UNANSWERED.has(code)) return true;
  }
  return false;
}

/** The port `url` connects to: its own, else its scheme's default. */
function portOf(url: URL): number {
  return url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
}

/**
 * True when the server at `host`:`port` completes a TLS handshake (whatever
 * its certificate: the question is only whether it speaks TLS); false when
 * it doesn't, can't be reached, or takes longer than the timeout.
 */
export function speaksTls(host: string, port: number, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    // Only a certificate's trust is waived, to learn that TLS is spoken; nothing is sent over the connection.
    const socket = connect({ host: bare, port, rejectUnauthorized: false, ...(isIP(bare) === 0 ? { servername: bare } : {}) });
    const done = (tls: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(tls);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('secureConnect', () => done(true));
    // Not a TLS server, or none at all: the failure is the answer, and the caller reports its own error.
    socket.on('error', () => done(false));
  });
}

/** The fetch the SDK is given, with no other signature than its own. */
type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/**
 * `fetch` that, when a plain-HTTP request fails with the connection closed
 * unanswered and the server turns out to speak TLS on that port, rejects
 * with a PlainHttpToTlsError (its cause fetch's error) instead of fetch's
 * bare `fetch failed`. Every other outcome is fetch's own.
 */
export function noticingTls(fetch: Fetch): Fetch {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (err) {
      const url = new URL(input);
      if (url.protocol !== 'http:' || init.signal?.aborted === true || !closedUnanswered(err)) throw err;
      const port = portOf(url);
      if (!(await speaksTls(url.hostname, port))) throw err;
      throw new PlainHttpToTlsError(url.origin, `https://${url.hostname}:${port}`, { cause: err });
    }
  };
}
