import type { Logger } from 'pino';

/**
 * A long-running command's stop: `signal` aborts on the first SIGTERM or
 * SIGINT (logged as `shutting down`); `dispose` stops listening for them.
 */
export function stopOnSignals(logger: Logger): { signal: AbortSignal; dispose(): void } {
  const stop = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    logger.info({ signal: sig }, 'shutting down');
    stop.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return {
    signal: stop.signal,
    dispose: () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    },
  };
}
