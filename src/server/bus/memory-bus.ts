import type { SignalBus, Subscription } from './signal-bus.js';
import { LocalSubscriptions } from './local-subscriptions.js';

/** The single-process bus: notifications reach this process's subscribers only. */
export class MemoryBus implements SignalBus {
  private readonly local = new LocalSubscriptions();

  notify(name: string): void {
    this.local.wake(name);
  }

  notifyAll(): void {
    this.local.wakeAll();
  }

  subscribe(name: string, onWake: () => void): Subscription {
    return this.local.subscribe(name, onWake);
  }

  async notifyInTransaction(): Promise<boolean> {
    return false;
  }

  async close(): Promise<void> {}
}
