/**
 * Errors of the dataplane. Each sets `name`; the underlying failure is `cause`.
 */

/** A command exited non-zero, was killed, or couldn't start. Never carries stdin (it may hold keys). */
export class CommandError extends Error {
  override name = 'CommandError';
  constructor(
    readonly command: string,
    readonly args: readonly string[],
    /** Exit code, or null when killed or not started. */
    readonly exitCode: number | null,
    readonly stderr: string,
    options?: { cause?: unknown },
  ) {
    const detail = stderr.trim().split('\n').slice(-3).join(' | ');
    super(
      `${[command, ...args].join(' ')} failed${exitCode === null ? '' : ` (exit ${exitCode})`}${detail ? `: ${detail}` : ''}`,
      options,
    );
  }
}

/** The part of an apply or cleanup that failed. */
export type DataplaneStep = 'validate' | 'firewall' | 'interface' | 'address' | 'peers' | 'routes' | 'render' | 'cleanup';

/**
 * An apply or cleanup failed at `step`. What earlier steps changed stays (see
 * the Dataplane contract); the caller retries with backoff.
 */
export class DataplaneError extends Error {
  override name = 'DataplaneError';
  constructor(
    readonly step: DataplaneStep,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${step}: ${message}`, options);
  }
}

/** apply() was aborted through its signal before it finished. */
export class DataplaneAbortedError extends Error {
  override name = 'DataplaneAbortedError';
  constructor(options?: { cause?: unknown }) {
    super('dataplane apply aborted', options);
  }
}
