/**
 * Small waiting primitives of the agent's loops: an abortable sleep and a
 * one-slot wake-up (any number of `fire()`s while the loop is busy become
 * one wake-up, so memory stays one flag whatever the rate).
 */

/** Waits `ms`, or less when `signal` aborts. Resolves true when the full time passed. */
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

/** A wake-up with one pending slot, for one waiting loop. */
export class Wakeup {
  #pending = false;
  #wake: (() => void) | undefined;

  get pending(): boolean {
    return this.#pending;
  }

  fire(): void {
    this.#pending = true;
    this.#wake?.();
  }

  /**
   * Resolves true when fired (at once if a fire is pending; the slot is
   * emptied), false on abort or after `timeoutMs` without a fire.
   */
  async wait(signal: AbortSignal, timeoutMs?: number): Promise<boolean> {
    if (!this.#pending && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = timeoutMs === undefined ? undefined : setTimeout(done, Math.max(0, timeoutMs));
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
      this.#wake = undefined;
    }
    if (signal.aborted || !this.#pending) return false;
    this.#pending = false;
    return true;
  }
}
