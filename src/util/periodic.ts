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
