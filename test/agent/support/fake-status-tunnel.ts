import type { StatusTunnel } from '../../../src/agent/status/status-delivery.js';
import type { SendStatusOptions, StatusRejection, StatusSendOutcome } from '../../../src/agent/tunnel/index.js';
import type { DeviceStatusInput } from '../../../src/protocol/index.js';

/**
 * How the fake tunnel's server answers a status frame: `ack`, `sent` (the
 * frame went as one answered only on error), an error code (`status_ack`
 * with that error), or `silent` (no answer: the frame times out, as with a
 * server that doesn't know status frames).
 */
export type FakeAck = 'ack' | 'sent' | 'silent' | 'not_found' | 'unavailable' | 'validation_failed';

/**
 * A StatusTunnel in memory: records the frames sent while connected and
 * answers each as `answers` says (then `mode`). `open()` (re)connects it and
 * tells the listeners; `drop()` disconnects it.
 */
export class FakeStatusTunnel implements StatusTunnel {
  connected: boolean;
  /** How frames are answered once `answers` is empty. */
  mode: FakeAck = 'ack';
  /** Answers for the next frames, in order. */
  answers: FakeAck[] = [];
  readonly frames: DeviceStatusInput[] = [];
  readonly #listeners = new Set<() => void>();
  readonly #rejected = new Set<(r: StatusRejection) => void>();

  constructor(connected = true) {
    this.connected = connected;
  }

  async sendStatus(status: DeviceStatusInput, opts: SendStatusOptions): Promise<StatusSendOutcome> {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (!this.connected) return { type: 'not_connected' };
    this.frames.push(status);
    const answer = this.answers.shift() ?? this.mode;
    if (answer === 'ack') return { type: 'acked' };
    if (answer === 'sent') return { type: 'sent' };
    if (answer !== 'silent') return { type: 'rejected', code: answer, message: `fake ${answer}` };
    const signal = opts.signal;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, opts.timeoutMs ?? 5_000);
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
    return { type: 'timeout' };
  }

  onOpen(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onStatusRejected(listener: (r: StatusRejection) => void): () => void {
    this.#rejected.add(listener);
    return () => this.#rejected.delete(listener);
  }

  /** The server refuses frame `seq` (1-based, of `frames`) after it went as `sent`. */
  refuseLater(seq: number, code: string): void {
    for (const l of this.#rejected) l({ seq, code, message: `fake late ${code}` });
  }

  open(): void {
    this.connected = true;
    for (const l of this.#listeners) l();
  }

  drop(): void {
    this.connected = false;
  }
}
