import { FORMATS } from '../../protocol/wire.js';
import { DURATION_EXAMPLES, parseDuration } from '../../util/duration.js';
import { UsageError } from '../exit-codes.js';

/** An RFC 3339 time as the flags' messages show one. */
const TIME_EXAMPLE = '2030-01-01T00:00:00Z';

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
 * A time bound in the past (`ctl audit --since`/`--until`), as an RFC 3339
 * time: one given as such, or a duration (util/duration.ts) meaning that
 * long before `now` (ms), as `kubectl logs --since=1h` takes it. Undefined
 * when absent; a UsageError naming `flag` and both forms otherwise.
 */
export function pastTime(flag: string, text: string | undefined, now: number): string | undefined {
  if (text === undefined) return undefined;
  if (FORMATS['date-time'](text)) return text;
  const seconds = parseDuration(text);
  if (seconds === undefined) throw new UsageError(`--${flag}: "${text}" is neither an RFC 3339 time (${TIME_EXAMPLE}) nor a duration ago (e.g. ${DURATION_EXAMPLES})`);
  return new Date(now - seconds * 1000).toISOString();
}

/**
 * `--expires-at` (an RFC 3339 time) and `--expires-in` (a duration, in
 * whole seconds) of a command that makes a credential, checked: at most
 * one, as the field the wire names it with; `{}` for neither. A UsageError
 * names the flag and its form (a duration given to `--expires-at` points
 * to `--expires-in`).
 */
export function expiryFields(at: string | undefined, within: string | undefined): { expires_at?: string; expires_in?: number } {
  if (at !== undefined && within !== undefined) throw new UsageError('give at most one of --expires-at and --expires-in');
  if (within !== undefined) return { expires_in: durationSeconds('expires-in', within) };
  if (at === undefined) return {};
  if (FORMATS['date-time'](at)) return { expires_at: at };
  const instead = parseDuration(at) === undefined ? '' : `; for a lifetime from now use --expires-in ${at}`;
  throw new UsageError(`--expires-at: "${at}" is not an RFC 3339 time (e.g. ${TIME_EXAMPLE})${instead}`);
}

/** `expiryFields` as `expires_at` alone (for routes that take no `expires_in`): `--expires-in` counted from `now` (ms). */
export function expiresAt(at: string | undefined, within: string | undefined, now: number): string | undefined {
  const fields = expiryFields(at, within);
  return fields.expires_in === undefined ? fields.expires_at : new Date(now + fields.expires_in * 1000).toISOString();
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
