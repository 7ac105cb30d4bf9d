/**
 * Runs `task` every `intervalMs` until `signal` aborts. Runs never overlap: the
 * next one is scheduled after the previous one settled. A failing run is
 * reported to `onError` and the loop goes on.
 */
export function runPeriodically(
  intervalMs: number,
  signal: AbortSignal,
  task: () => Promise<void>,
  onError: (err: unknown) => void,
): Promise<void> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = (): void => {
      if (timer) clearTimeout(timer);
      resolve();
    };
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    const tick = (): void => {
      timer = undefined;
      task()
        .catch(onError)
        .finally(() => {
          if (!signal.aborted) timer = setTimeout(tick, intervalMs).unref();
        });
    };
    timer = setTimeout(tick, intervalMs).unref();
  });
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
