interface Slot {
  pending: boolean;
  wake: (() => void) | undefined;
}

/**
 * Change notifications with one slot per subscriber, like a Go channel of
 * capacity one: any number of `notify()` calls while a subscriber is busy
 * become one wake-up. Memory is one flag per subscriber, whatever the rate.
 */
export class ChangeSignal {
  readonly #slots = new Set<Slot>();
  #closed = false;

  notify(): void {
    for (const slot of this.#slots) {
      slot.pending = true;
      slot.wake?.();
    }
  }

  /** Ends every subscription (after its pending notification, if any). */
  close(): void {
    this.#closed = true;
    for (const slot of this.#slots) slot.wake?.();
  }

  /**
   * A subscription, registered at once (not at the first `next()`), so no
   * notification between this call and the first `next()` is lost. Ends when
   * `signal` aborts, when the consumer stops, or after `close()`.
   */
  subscribe(signal?: AbortSignal, pending = false): AsyncGenerator<void, void, undefined> {
    const slot: Slot = { pending, wake: undefined };
    this.#slots.add(slot);
    const release = (): void => {
      this.#slots.delete(slot);
      signal?.removeEventListener('abort', onAbort);
    };
    // Released on abort even if never iterated, so an abandoned subscription doesn't stay registered.
    const onAbort = (): void => {
      release();
      slot.wake?.();
    };
    if (signal?.aborted) release();
    else signal?.addEventListener('abort', onAbort, { once: true });
    return this.#iterate(slot, signal, release);
  }

  async *#iterate(slot: Slot, signal: AbortSignal | undefined, release: () => void): AsyncGenerator<void, void, undefined> {
    try {
      for (;;) {
        if (signal?.aborted) return;
        if (slot.pending) {
          slot.pending = false;
          yield;
          continue;
        }
        if (this.#closed) return;
        await new Promise<void>((resolve) => {
          slot.wake = resolve;
        });
        slot.wake = undefined;
      }
    } finally {
      release();
    }
  }
}
