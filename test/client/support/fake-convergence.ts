/**
 * The convergence route of the fake fleet server: `GET .../convergence`
 * answers the current value; with `?watch=true`, an NDJSON stream of
 * `convergence` lines (the current value at once, then every `set`) that
 * tests can end with an error line, cut, or feed raw lines.
 */
import type { ServerResponse } from 'node:http';
import { ERRORS, HEADERS, MEDIA, QUERY, type Convergence, type ErrorCode } from '../../../src/protocol/index.js';

export class FakeConvergenceFeed {
  value: Convergence = { revision: 0, devices: 0, at_head: 0, behind: 0, error: 0, stale: 0, online: 0, not_converged: [] };
  readonly watchers = new Set<ServerResponse>();
  /** Watch requests received (accepted or not). */
  watchRequests = 0;
  /** Answer the next watch requests with these errors instead of a stream. */
  reject: ErrorCode[] = [];
  /** `Retry-After` sent with a rejected 429/503. */
  retryAfter: string | undefined;
  /** Answer `?watch=true` like a server without the stream: one plain JSON value. */
  withoutWatch = false;

  handle(res: ServerResponse, url: URL): void {
    if (url.searchParams.get(QUERY.watch) !== 'true' || this.withoutWatch) {
      if (url.searchParams.get(QUERY.watch) === 'true') this.watchRequests++;
      res.writeHead(200, { [HEADERS.contentType]: MEDIA.json });
      return void res.end(JSON.stringify(this.value));
    }
    this.watchRequests++;
    const rejected = this.reject.shift();
    if (rejected !== undefined) {
      const status = ERRORS[rejected].status;
      const headers: Record<string, string> = { [HEADERS.contentType]: MEDIA.json };
      if (this.retryAfter !== undefined && (status === 429 || status === 503)) headers[HEADERS.retryAfter] = this.retryAfter;
      res.writeHead(status, headers);
      return void res.end(JSON.stringify({ error: { code: rejected, message: ERRORS[rejected].message } }));
    }
    res.writeHead(200, { [HEADERS.contentType]: MEDIA.watch });
    res.write(`${JSON.stringify({ type: 'convergence', value: this.value })}\n`);
    this.watchers.add(res);
    res.on('close', () => this.watchers.delete(res));
  }

  /** Changes the value and sends it on every stream. */
  set(patch: Partial<Convergence>): void {
    this.value = { ...this.value, ...patch };
    this.raw(`${JSON.stringify({ type: 'convergence', value: this.value })}\n`);
  }

  raw(text: string): void {
    for (const w of this.watchers) w.write(text);
  }

  /** Sends an error line and ends every stream. */
  end(code: ErrorCode, message: string = ERRORS[code].message): void {
    this.raw(`${JSON.stringify({ type: 'error', value: { code, message } })}\n`);
    for (const w of this.watchers) w.end();
    this.watchers.clear();
  }

  /** Destroys every stream's connection. */
  cut(): void {
    for (const w of this.watchers) w.socket?.destroy();
    this.watchers.clear();
  }
}
