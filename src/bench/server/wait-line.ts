import type { Readable } from 'node:stream';

/**
 * Resolves with the first match of `pattern` in the text a stream emits;
 * rejects when `signal` aborts first. The stream keeps flowing afterwards.
 */
export function waitForLine(stream: Readable, pattern: RegExp, signal: AbortSignal): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text = (text + chunk.toString('utf8')).slice(-65536);
      const m = pattern.exec(text);
      if (m) {
        cleanup();
        resolve(m);
      }
    };
    const onAbort = (): void => {
      cleanup();
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    };
    const cleanup = (): void => {
      stream.off('data', onData);
      signal.removeEventListener('abort', onAbort);
    };
    if (signal.aborted) return onAbort();
    stream.on('data', onData);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
