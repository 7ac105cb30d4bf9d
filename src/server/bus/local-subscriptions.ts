import type { Subscription } from './signal-bus.js';

/**
 * The local half of every bus driver: subscribers by name, with coalesced,
 * asynchronous wake-ups. Drivers feed it names received from their transport.
 */
export class LocalSubscriptions {
  private readonly byName = new Map<string, Set<() => void>>();
  private readonly pending = new Set<string>();
  private pendingAll = false;
  private scheduled = false;

  /** `onError` receives a listener's exception; the other listeners still wake. */
  constructor(private readonly onError: (err: unknown) => void = (err) => console.error('signal listener failed', err)) {}

  subscribe(name: string, onWake: () => void): Subscription {
    let set = this.byName.get(name);
    if (!set) {
      set = new Set();
      this.byName.set(name, set);
    }
    const listener = (): void => onWake();
    set.add(listener);
    let closed = false;
    return {
      close: () => {
        if (closed) return;
        closed = true;
        const current = this.byName.get(name);
        if (!current) return;
        current.delete(listener);
        if (current.size === 0) this.byName.delete(name);
      },
    };
  }

  /** Number of names with at least one subscriber. */
  get names(): number {
    return this.byName.size;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  wake(name: string): void {
    if (!this.byName.has(name)) return;
    this.pending.add(name);
    this.schedule();
  }

  wakeAll(): void {
    this.pendingAll = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate, not a microtask: a burst of notifies in one tick becomes one wake-up.
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const names = this.pendingAll ? [...this.byName.keys()] : [...this.pending];
    this.pending.clear();
    this.pendingAll = false;
    for (const name of names) {
      for (const listener of this.byName.get(name) ?? []) {
        try {
          listener();
        } catch (err) {
          this.onError(err);
        }
      }
    }
  }
}
