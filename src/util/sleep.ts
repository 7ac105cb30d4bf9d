/**
 * The one sleep of the project (server, SDK, agent, CLI, bench, dashboard):
 * timers and AbortSignal only, so it runs in browsers too.
 */

/**
 * Waits `ms` (a negative value as 0), or less when `signal` aborts. Resolves
 * true when the full time passed, false when aborted; never rejects. A caller
 * that must stop on abort follows it with `signal.throwIfAborted()`.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (full: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(full);
    };
    const onAbort = (): void => done(false);
    const timer = setTimeout(() => done(true), Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
