/**
 * A one-slot wake-up for the agent's loops: any number of `fire()`s while
 * the loop is busy become one wake-up, so memory stays one flag whatever the
 * rate.
 */

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
