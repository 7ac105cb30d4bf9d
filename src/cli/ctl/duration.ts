import { DURATION_EXAMPLES, parseDuration } from '../../util/duration.js';
import { UsageError } from '../exit-codes.js';

/** A duration (util/duration.ts: `7d`, `1h30m`, plain seconds) as whole seconds; a UsageError naming `flag` otherwise. */
export function durationSeconds(flag: string, text: string): number {
  const seconds = parseDuration(text);
  if (seconds === undefined) throw new UsageError(`--${flag}: "${text}" is not a duration (e.g. ${DURATION_EXAMPLES})`);
  return Math.ceil(seconds);
}

/** `durationSeconds` of a flag that may be absent. */
export function optionalDuration(flag: string, text: string | undefined): number | undefined {
  return text === undefined ? undefined : durationSeconds(flag, text);
}

/**
 * When `timestamp` comes, relative to `now`, in the short form of `age()`:
 * `in 5d`, `in 3h`; `expired` once past; `never` without one.
 */
export function until(timestamp: string | null | undefined, now: number): string {
  if (timestamp === null || timestamp === undefined) return 'never';
  const at = Date.parse(timestamp);
  if (Number.isNaN(at)) return '?';
  const s = Math.floor((at - now) / 1000);
  if (s <= 0) return 'expired';
  if (s < 60) return `in ${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `in ${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `in ${h}h`;
  return `in ${Math.floor(h / 24)}d`;
}
