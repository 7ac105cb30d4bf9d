import { HEADERS, MEDIA, bearerAuthorization } from '../protocol/wire.js';
import { errorFromResponse } from './error-mapping.js';
import { ProtocolError, TransportError } from './errors.js';

/** The subset of `fetch` the SDK uses: pass any WHATWG-compatible implementation. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  /** Server base URL, e.g. `https://fleet.example.com` (a path prefix is kept). */
  baseUrl: string;
  /**
   * Bearer token sent on every call (admin, organization, device token or
   * registration key), or a function returning the current one, read at
   * every request (an agent renewing its device token swaps it there).
   */
  token?: string | (() => string) | undefined;
  /** Defaults to the global `fetch`. */
  fetch?: FetchLike | undefined;
  /** Milliseconds clock an HTTP-date `Retry-After` is counted from (default `Date.now`). */
  now?: (() => number) | undefined;
}

export type QueryValue = string | number | boolean | undefined;

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** A body sent as is instead of JSON (`body` is then ignored): its text and media type, e.g. a policy document as `MEDIA.yaml`. */
  text?: { body: string; type: string } | undefined;
  headers?: Record<string, string | undefined>;
  /** Overrides the client's token for this call (enrollment uses the registration key). */
  token?: string | undefined;
  signal?: AbortSignal | undefined;
  accept?: string;
  /** Non-2xx statuses that are answers rather than errors (304 for polling). */
  allowStatus?: readonly number[];
}

function isAbort(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true || (err instanceof Error && err.name === 'AbortError');
}

/**
 * Sends requests and maps failures to typed errors. Aborts are not mapped:
 * they rethrow the signal's reason, as `fetch` does.
 */
export class HttpTransport {
  readonly baseUrl: string;
  readonly #token: string | (() => string) | undefined;
  readonly #fetch: FetchLike;
  readonly #now: () => number;

  constructor(opts: TransportOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token;
    this.#now = opts.now ?? Date.now;
    // A late lookup: browsers reject `fetch` called with another `this`.
    this.#fetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  url(path: string, query?: Record<string, QueryValue>): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
  }

  /**
   * The response for a 2xx (or allowed) status; a typed error otherwise (a
   * 429 or 503 error carries the server's Retry-After as `retryAfterMs`).
   */
  async send(req: HttpRequest): Promise<Response> {
    const headers: Record<string, string> = { accept: req.accept ?? MEDIA.json };
    const token = req.token ?? (typeof this.#token === 'function' ? this.#token() : this.#token);
    if (token !== undefined) headers[HEADERS.authorization] = bearerAuthorization(token);
    for (const [k, v] of Object.entries(req.headers ?? {})) if (v !== undefined) headers[k] = v;
    const init: RequestInit = { method: req.method, headers };
    if (req.text !== undefined) {
      headers[HEADERS.contentType] = req.text.type;
      init.body = req.text.body;
    } else if (req.body !== undefined) {
      headers[HEADERS.contentType] = MEDIA.json;
      init.body = JSON.stringify(req.body);
    }
    if (req.signal) init.signal = req.signal;
    let res: Response;
    try {
      res = await this.#fetch(this.url(req.path, req.query), init);
    } catch (err) {
      if (isAbort(err, req.signal)) throw req.signal?.reason ?? err;
      throw new TransportError({ code: 'network_error', message: `${req.method} ${req.path}: ${describe(err)}`, cause: err });
    }
    if (res.ok || req.allowStatus?.includes(res.status)) return res;
    throw await errorFromResponse(res, this.#now());
  }

  /** Sends and parses a JSON body. */
  async json<T>(req: HttpRequest, check: (v: unknown) => v is T, what: string): Promise<T> {
    const res = await this.send(req);
    return readJson(res, check, `${req.method} ${req.path}`, what, req.signal);
  }

  /** Sends and discards the body (204 answers). */
  async empty(req: HttpRequest): Promise<Response> {
    const res = await this.send(req);
    await discardBody(res);
    return res;
  }
}

/** Releases a body the caller doesn't need (204, 304). */
export async function discardBody(res: Response): Promise<void> {
  try {
    await res.body?.cancel();
  } catch {
    // The answer is complete without the body; a failing cancel changes nothing for the caller.
  }
}

/** The whole body as text; a broken connection is a TransportError, an abort rethrows the signal's reason. `call`: `GET /api/...`, for messages. */
export async function readText(res: Response, call: string, signal?: AbortSignal): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    if (isAbort(err, signal)) throw signal?.reason ?? err;
    throw new TransportError({ code: 'network_error', status: res.status, message: `${call}: reading the body failed: ${describe(err)}`, cause: err });
  }
}

export async function readJson<T>(
  res: Response,
  check: (v: unknown) => v is T,
  call: string,
  what: string,
  signal?: AbortSignal,
): Promise<T> {
  const text = await readText(res, call, signal);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ProtocolError({ code: 'invalid_response', status: res.status, message: `${call}: the body is not JSON`, cause: err });
  }
  if (!check(parsed)) {
    throw new ProtocolError({ code: 'invalid_response', status: res.status, message: `${call}: expected ${what}`, details: { body: text.slice(0, 200) } });
  }
  return parsed;
}

export function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
