/**
 * How the agent's retry loops log a failure. A transient one (the server
 * unreachable, restarting, overloaded) is expected in a fleet's life: one
 * info line with the message and code, no stack trace. Anything else (a
 * bug, a refused certificate, plain HTTP to a server that speaks HTTPS, an
 * answer the protocol doesn't allow) is a warning with the whole error,
 * because someone has to look at it.
 */
import type { Logger } from 'pino';
import { FleetplaneError } from '../client/index.js';
import { isPlainHttpToTls } from '../util/plain-http-to-tls.js';
import { certificateHint, isUntrustedCertificate } from '../util/untrusted-certificate.js';
import { AGENT_FLAGS } from './options.js';

/** Error codes of Node's sockets and DNS, and of undici, that say "try again later". */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** Wire and SDK codes of failures that pass by themselves. */
const TRANSIENT_API_CODES = new Set(['network_error', 'stream_idle', 'unavailable', 'too_many_requests', 'internal', 'agent_not_connected']);

function codeOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** The innermost error code along `cause` (fetch's "fetch failed" carries the socket's). */
function rootCode(err: unknown): string | undefined {
  let found: string | undefined;
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    found = codeOf(e) ?? found;
    e = e instanceof Error ? e.cause : undefined;
  }
  return found;
}

/** The messages along `cause`, each once: "POST /api/x: fetch failed (connect ECONNREFUSED 127.0.0.1:80)". */
function chainMessage(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const text = e instanceof Error ? e.message : String(e);
    if (text !== '' && !parts.some((p) => p.includes(text))) parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  const [first = '', ...rest] = parts;
  return rest.length > 0 ? `${first} (${rest.join(': ')})` : first;
}

/** An HTTP status the error carries (SDK errors, the tunnel's refused handshake). */
function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const status = (err as { status?: unknown }).status;
  return typeof status === 'number' && status > 0 ? status : undefined;
}

/**
 * What to do about an error caused by an untrusted server certificate:
 * pass the CA with `--ca-file`. Undefined for any other error.
 */
export function caFileHint(err: unknown): string | undefined {
  return certificateHint(err, `--${AGENT_FLAGS.caFile.flag} (or ${AGENT_FLAGS.caFile.env})`);
}

/** True for failures expected to pass by themselves: network errors, 429, 5xx, timeouts. */
export function isTransient(err: unknown): boolean {
  // The SDK reports a refused certificate, and plain HTTP to a server that speaks HTTPS, as a network_error like any
  // other failed fetch, but neither passes by itself.
  if (isUntrustedCertificate(err) || isPlainHttpToTls(err)) return false;
  if (err instanceof FleetplaneError) return TRANSIENT_API_CODES.has(err.code) || err.status === 429 || err.status >= 500;
  const status = statusOf(err);
  if (status !== undefined) return status === 429 || status >= 500;
  const code = rootCode(err);
  if (code !== undefined && TRANSIENT_CODES.has(code)) return true;
  // ws reports a handshake that took too long (and a socket closed mid-handshake) without a code.
  return err instanceof Error && /handshake has timed out|socket hang up|closed before the connection was established/i.test(err.message);
}

/**
 * Logs a failure a retry loop will retry: transient ones at info as
 * `{error, code?, status?, ...fields}` on one line; others at warn with the
 * whole error as `err`, and for an untrusted server certificate a `hint`
 * naming `--ca-file`.
 */
export function logRetry(logger: Logger, err: unknown, fields: Record<string, unknown>, msg: string): void {
  if (isTransient(err)) {
    const code = err instanceof FleetplaneError && err.code !== 'network_error' ? err.code : rootCode(err);
    const status = statusOf(err);
    logger.info({ ...fields, error: chainMessage(err), ...(code ? { code } : {}), ...(status ? { status } : {}) }, msg);
  } else {
    const hint = caFileHint(err);
    logger.warn({ ...fields, err, ...(hint ? { hint } : {}) }, msg);
  }
}
