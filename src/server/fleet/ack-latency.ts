import type { Histogram } from 'prom-client';
import type { StatusWrite } from '../store/index.js';
import type { FanOutTimes } from '../watch/fan-out-times.js';

/**
 * Times a device's ACK (a recorded status that changed its applied revision,
 * with no apply error) from when that revision was fanned out on this
 * replica, into `histogram`. ACKs of revisions this replica did not fan out
 * recently (FanOutTimes' window) are not timed. One lookup in at most
 * FAN_OUT_WINDOW heads and one observation per ACK.
 */
export function ackLatencyObserver(times: FanOutTimes, histogram: Histogram): (write: StatusWrite, receivedAt: number) => void {
  // Bound once: observe(value) on the histogram builds a closure per call, and this runs per ACK.
  const unlabelled = histogram.labels();
  return (write, receivedAt) => {
    const revision = write.input.applied_revision;
    if (revision === null || write.input.apply_error !== null) return;
    const fannedOut = times.timeOf(write.orgId, revision);
    if (fannedOut === undefined) return;
    unlabelled.observe(Math.max(0, receivedAt - fannedOut) / 1000);
  };
}
