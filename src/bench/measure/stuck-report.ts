import type { StuckReport } from '../load/agent-messages.js';

/** Agents described in detail when a wait times out: enough to see a pattern, short enough for a report. */
export const STUCK_EXAMPLES = 3;

/**
 * One line for a report: agents not at their tails by where their watch is,
 * then the first few with their state and last transitions, so a run that
 * timed out explains itself without a rerun.
 */
export function describeStuck(r: StuckReport): string {
  const states = Object.entries(r.byState)
    .sort(([, a], [, b]) => b - a)
    .map(([k, v]) => `${v} ${k}`)
    .join('; ');
  const examples = r.examples.map(
    (e) =>
      `device ${e.deviceId}: ${e.state}, tails [${e.tailed.join(',')}], revisions [${e.revisions.join(',')}], bookmark ${e.bookmark}` +
      `${e.retryArmed ? ', retry armed' : ''}${e.socketHeld ? ', socket held' : ''}${e.silenceMs === null ? ', no silence limit' : ''}; last: ${e.trace.join(' | ') || 'nothing'}`,
  );
  return [`not at their tails: ${states || 'none'}`, ...examples].join(' || ');
}
