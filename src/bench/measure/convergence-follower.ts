import http from 'node:http';
import { CONVERGENCE_MIN_INTERVAL_MS, HEADERS, MEDIA, QUERY, bearerAuthorization, paths, type Convergence, type ConvergenceEvent } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import type { FleetApi } from '../http-api.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';

/** One convergence report as the harness received it. */
export interface ConvergenceReading {
  /** nowMs() when the harness had it. */
  at: number;
  revision: number;
  devices: number;
  atHead: number;
  online: number;
}

export const POLL_INTERVAL_MS = 50;
const STREAM_HEAD_TIMEOUT_MS = 5_000;
const CONVERGENCE: ConvergenceEvent['type'] = 'convergence';

function reading(v: Partial<Convergence>, at: number): ConvergenceReading {
  return { at, revision: Number(v.revision), devices: Number(v.devices), atHead: Number(v.at_head), online: v.online === undefined ? Number.NaN : Number(v.online) };
}

/**
 * Follows `GET /api/organizations/{org}/convergence` with the admin token:
 * the `?watch=true` stream when the server serves one, else polling every
 * 50 ms, only while someone waits (so polls stay inside the change windows;
 * `polls` counts them, for the statements they cost). `how` says which, and
 * why the stream wasn't used.
 */
export class ConvergenceFollower {
  mode: 'stream' | 'poll' = 'poll';
  how = '';
  polls = 0;
  latest: ConvergenceReading | undefined;
  private readonly waiters = new Set<(r: ConvergenceReading) => void>();
  private req: http.ClientRequest | undefined;
  private polling = false;
  private stopped = false;

  private constructor(
    private readonly api: FleetApi,
    private readonly org: string,
  ) {}

  static async start(api: FleetApi, baseUrl: string, org: string, token: string): Promise<ConvergenceFollower> {
    const f = new ConvergenceFollower(api, org);
    const why = await f.openStream(baseUrl, token);
    if (why === undefined) {
      f.mode = 'stream';
      f.how = `followed GET ${decodeURIComponent(paths.convergence('{org}'))}?${QUERY.watch}=true (NDJSON convergence lines, at most one per ${CONVERGENCE_MIN_INTERVAL_MS} ms)`;
    } else {
      f.fallBack(why);
    }
    return f;
  }

  private fallBack(why: string): void {
    this.mode = 'poll';
    this.how = `polled GET ${decodeURIComponent(paths.convergence('{org}'))} every ${POLL_INTERVAL_MS} ms while waiting (${why})`;
    log.warn({ why }, 'convergence stream unavailable; polling');
    if (this.waiters.size > 0) void this.pollLoop();
  }

  /** Resolves undefined once the stream is flowing, or with why it can't be used. */
  private openStream(baseUrl: string, token: string): Promise<string | undefined> {
    const url = new URL(baseUrl);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (why: string | undefined): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(why);
      };
      const req = http.request(
        { host: url.hostname, port: url.port, method: 'GET', path: `${paths.convergence(this.org)}?${QUERY.watch}=true`, headers: { [HEADERS.authorization]: bearerAuthorization(token) } },
        (res) => {
          const type = String(res.headers[HEADERS.contentType] ?? '');
          if (res.statusCode !== 200 || !type.startsWith(MEDIA.watch)) {
            res.resume();
            req.destroy();
            return settle(`?${QUERY.watch}=true was answered ${res.statusCode ?? 0} ${type || 'without a content type'}, not a stream: the server has no convergence stream yet`);
          }
          settle(undefined);
          let partial = '';
          res.setEncoding('utf8');
          res.on('data', (text: string) => {
            const lines = (partial + text).split('\n');
            partial = lines.pop() ?? '';
            for (const line of lines) if (line.trim() !== '') this.onLine(line);
          });
          res.on('close', () => {
            if (!this.stopped && this.mode === 'stream') this.fallBack('the convergence stream ended');
          });
        },
      );
      this.req = req;
      const timer = setTimeout(() => {
        req.destroy();
        settle(`no answer to ?${QUERY.watch}=true within ${STREAM_HEAD_TIMEOUT_MS} ms`);
      }, STREAM_HEAD_TIMEOUT_MS);
      req.on('error', (err) => settle(`?${QUERY.watch}=true failed: ${err.message}`));
      req.end();
    });
  }

  private onLine(line: string): void {
    let event: { type?: unknown; value?: unknown };
    try {
      event = JSON.parse(line) as { type?: unknown; value?: unknown };
    } catch {
      return;
    }
    if (event.type === CONVERGENCE && typeof event.value === 'object' && event.value !== null) this.publish(reading(event.value as Partial<Convergence>, nowMs()));
    else log.warn({ line: line.slice(0, 300) }, 'convergence stream line');
  }

  private publish(r: ConvergenceReading): void {
    this.latest = r;
    for (const w of [...this.waiters]) w(r);
  }

  private async pollLoop(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      while (!this.stopped && this.mode === 'poll' && this.waiters.size > 0) {
        const next = nowMs() + POLL_INTERVAL_MS;
        this.polls++;
        const res = await this.api.request('GET', paths.convergence(this.org)).catch(() => undefined);
        if (res?.status === 200) this.publish(reading(JSON.parse(res.body) as Partial<Convergence>, res.doneAt));
        const wait = next - nowMs();
        if (wait > 0) await sleep(wait);
      }
    } finally {
      this.polling = false;
    }
  }

  /** The first reading (the latest included) that satisfies `ok`, or undefined after `timeoutMs`. */
  waitFor(ok: (r: ConvergenceReading) => boolean, timeoutMs: number): Promise<ConvergenceReading | undefined> {
    if (this.latest && ok(this.latest)) return Promise.resolve(this.latest);
    return new Promise((resolve) => {
      const finish = (r: ConvergenceReading | undefined): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(r);
      };
      const check = (r: ConvergenceReading): void => {
        if (ok(r)) finish(r);
      };
      const timer = setTimeout(() => finish(undefined), timeoutMs);
      this.waiters.add(check);
      if (this.mode === 'poll') void this.pollLoop();
    });
  }

  stop(): void {
    this.stopped = true;
    this.req?.destroy();
    for (const w of [...this.waiters]) this.waiters.delete(w);
  }
}
