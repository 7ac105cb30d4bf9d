import { nowMs } from '../clock.js';

/**
 * Calls `onSilent` once `limitMs` passed without `heard()`. Hearing only
 * reads the clock: the one timer is re-armed when it fires early, so a
 * stream moving gigabytes over thousands of sockets doesn't pay a timer per
 * read.
 */
export class SilenceWatchdog {
  private lastHeard = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limitMs: number,
    private readonly onSilent: () => void,
  ) {}

  start(): void {
    this.stop();
    this.lastHeard = nowMs();
    this.schedule(this.limitMs);
  }

  heard(): void {
    this.lastHeard = nowMs();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.check(), ms);
  }

  private check(): void {
    const left = this.lastHeard + this.limitMs - nowMs();
    if (left > 0) return this.schedule(left);
    this.timer = undefined;
    this.onSilent();
  }
}
