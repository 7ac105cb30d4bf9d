/**
 * The loop that keeps the device's published endpoints (and its route
 * request) and its status' local addresses current.
 */
import type { Logger } from 'pino';
import { AuthError, NotFoundError } from '../../client/index.js';
import { logRetry } from '../transient.js';
import type { Wakeup } from '../wakeup.js';
import type { EndpointPublisher, OwnSpec } from './endpoint-publisher.js';
import type { StatusReporter } from './status-reporter.js';

export interface EndpointUpkeepOptions {
  publisher: EndpointPublisher;
  reporter: StatusReporter;
  /** The device's endpoints, `symmetric_nat` and `advertise_cidrs` as the server has them (the watch's copy), or undefined. */
  own: () => OwnSpec | undefined;
  /** Between two rounds. */
  intervalMs: number;
  /** Fired for a round now (STUN's state changed). */
  wakeup: Wakeup;
  /** Called when the local addresses changed since the last round (a new network: the public mapping may be new too). */
  onLocalChange?: () => void;
  /** A PATCH was refused for good (device deleted, token refused); the loop goes on until aborted. */
  onFatal: (err: NotFoundError | AuthError) => void;
  logger: Logger;
}

/**
 * Each round (at once, then every `intervalMs` or on `wakeup`): reports the
 * local addresses in the status, and publishes what changed (see
 * EndpointPublisher.check). A failed PATCH is tried again next round.
 * Resolves when `signal` aborts.
 */
export async function runEndpointUpkeep(o: EndpointUpkeepOptions, signal: AbortSignal): Promise<void> {
  let lastLocal: string | undefined;
  while (!signal.aborted) {
    const local = o.publisher.localEndpoints();
    o.reporter.update({ local_endpoints: local });
    const key = local.join(' ');
    if (lastLocal !== undefined && key !== lastLocal) o.onLocalChange?.();
    lastLocal = key;
    try {
      await o.publisher.check(o.own(), signal);
    } catch (err) {
      if (signal.aborted) break;
      if (err instanceof NotFoundError || err instanceof AuthError) o.onFatal(err);
      else logRetry(o.logger, err, {}, 'publishing endpoints failed; trying again at the next interval');
    }
    await o.wakeup.wait(signal, o.intervalMs);
  }
}
