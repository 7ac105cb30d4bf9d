import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { FetchLike } from '../../client/index.js';

/** Statuses whose responses have no body (a Response can't be built with one). */
const NULL_BODY = new Set([204, 205, 304]);

function responseHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (Array.isArray(v)) for (const one of v) headers.append(k, one);
    else if (v !== undefined) headers.set(k, v);
  }
  return headers;
}

function requestBody(body: RequestInit['body']): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  throw new TypeError('only string request bodies are supported');
}

/**
 * A `fetch` for the SDK that trusts the given PEM certificates for https
 * (Node's built-in fetch takes no CA without an extra package). Streams
 * response bodies, so watches work; aborting the signal destroys the
 * request and errors the body with the signal's reason, as fetch does.
 */
export function fetchTrusting(ca: string): FetchLike {
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const signal = init.signal ?? undefined;
      if (signal?.aborted) return reject(signal.reason);
      const url = new URL(input);
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((v, k) => (headers[k] = v));
      const options = { method: init.method ?? 'GET', headers };
      const req = url.protocol === 'https:' ? httpsRequest(url, { ...options, ca }) : httpRequest(url, options);
      const onAbort = (): void => void req.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      // `on`, not `once`: the socket can fail again after the response began (the body stream reports that).
      req.on('error', (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(new TypeError('fetch failed', { cause: err }));
      });
      req.once('response', (res) => {
        res.once('close', () => signal?.removeEventListener('abort', onAbort));
        const status = res.statusCode ?? 500;
        const nullBody = NULL_BODY.has(status) || init.method === 'HEAD';
        if (nullBody) res.on('error', () => undefined).resume();
        // Node's web ReadableStream and the DOM one are the same object with different type declarations.
        const body = nullBody ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>);
        resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers: responseHeaders(res) }));
      });
      req.end(requestBody(init.body));
    });
}
