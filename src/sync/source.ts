import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MEDIA } from '../protocol/index.js';

/** Where the syncer reads the document from. */
export interface PolicySource {
  /** The path or URL, for logs. */
  readonly location: string;
  /** The document's text; a SourceError when it can't be had. Aborts rethrow the signal's reason. */
  read(signal: AbortSignal): Promise<string>;
}

/**
 * The source could not be read. `retryable`: a failure that may pass by
 * itself soon (the network, a timeout, a 5xx or 429 answer), worth a retry
 * with backoff before the next interval.
 */
export class SourceError extends Error {
  override readonly name = 'SourceError';

  constructor(
    message: string,
    readonly retryable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const RETRYABLE_STATUS = (status: number): boolean => status >= 500 || status === 429 || status === 408;

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}

/** A file, re-read at each sync. */
export function fileSource(path: string): PolicySource {
  return {
    location: path,
    async read(signal) {
      try {
        return await readFile(path, { encoding: 'utf8', signal });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw new SourceError(`reading ${path}: ${describe(err)}`, false, { cause: err });
      }
    },
  };
}

export type SourceFetch = (url: string, init: RequestInit) => Promise<Response>;

/** An http(s) URL, fetched at each sync; a fetch that takes longer than `timeoutMs` fails. */
export function urlSource(url: string, timeoutMs: number, fetchImpl: SourceFetch = (u, init) => globalThis.fetch(u, init)): PolicySource {
  return {
    location: url,
    async read(signal) {
      const timeout = AbortSignal.timeout(timeoutMs);
      try {
        const res = await fetchImpl(url, { signal: AbortSignal.any([signal, timeout]), headers: { accept: `${MEDIA.yaml}, text/plain;q=0.9, */*;q=0.5` } });
        if (!res.ok) {
          await res.body?.cancel().catch(() => undefined);
          throw new SourceError(`GET ${url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`, RETRYABLE_STATUS(res.status));
        }
        return await res.text();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (err instanceof SourceError) throw err;
        if (timeout.aborted) throw new SourceError(`GET ${url}: no answer within ${timeoutMs / 1000}s`, true, { cause: err });
        throw new SourceError(`GET ${url}: ${describe(err)}`, true, { cause: err });
      }
    },
  };
}

/** The source `--from` names: an http(s) URL, a `file:` URL, or a path (relative to `cwd`). */
export function policySource(from: string, opts: { timeoutMs: number; cwd?: string; fetch?: SourceFetch }): PolicySource {
  if (/^https?:\/\//i.test(from)) return urlSource(from, opts.timeoutMs, opts.fetch);
  if (/^file:/i.test(from)) return fileSource(fileURLToPath(from));
  return fileSource(resolve(opts.cwd ?? process.cwd(), from));
}
