import { abortedError, IdentityError } from './identity-error.js';
import type { OidcSettings } from './oidc-settings.js';

/** A JSON object answered by one of the issuer's endpoints, with its HTTP status. */
export interface JsonAnswer {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
}

export interface JsonRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: URLSearchParams;
  /** Names the endpoint in error messages, e.g. "token endpoint". */
  what: string;
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  signal?: AbortSignal | undefined;
}

/** The body of `response` as text; throws IdentityError `http_failed` past `maxBytes`. */
export async function readBounded(response: Response, maxBytes: number, what: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new IdentityError('http_failed', `the ${what} answered ${declared} bytes, more than the ${maxBytes} accepted`, { status: response.status });
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new IdentityError('http_failed', `the ${what} answered more than the ${maxBytes} bytes accepted`, { status: response.status });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One request to the issuer whose answer must be a JSON object, whatever its status: the caller
 * interprets the status. Never follows redirects (a redirect is an `http_failed`). Throws
 * IdentityError `aborted` when `signal` fires, `http_failed` on network errors, the timeout,
 * oversized or non-JSON answers.
 */
export async function requestJson(settings: OidcSettings, url: string, request: JsonRequest): Promise<JsonAnswer> {
  const aborted = abortedError(request.signal);
  if (aborted) throw aborted;
  const timeout = AbortSignal.timeout(settings.httpTimeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  let status: number | undefined;
  try {
    const response = await settings.fetch(url, {
      method: request.method,
      headers: { accept: 'application/json', ...request.headers },
      ...(request.body ? { body: request.body.toString() } : {}),
      redirect: 'manual',
      signal,
    });
    status = response.status;
    const text = await readBounded(response, request.maxBytes, request.what);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw new IdentityError('http_failed', `the ${request.what} answered HTTP ${status} without a JSON body`, { cause: err, status });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new IdentityError('http_failed', `the ${request.what} answered HTTP ${status} with JSON that is not an object`, { status });
    }
    return { status, body: body as Record<string, unknown> };
  } catch (err) {
    const abort = abortedError(request.signal);
    if (abort) throw abort;
    if (err instanceof IdentityError) throw err;
    const why = timeout.aborted ? `timed out after ${settings.httpTimeoutMs} ms` : 'could not be reached';
    throw new IdentityError('http_failed', `the ${request.what} (${url}) ${why}`, { cause: err, ...(status === undefined ? {} : { status }) });
  }
}

/** A string member of a JSON object, or undefined when absent or of another type. */
export function stringField(body: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const value = body[name];
  return typeof value === 'string' ? value : undefined;
}
