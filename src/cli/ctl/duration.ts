import { UsageError } from '../exit-codes.js';

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };

/** `7d`, `12h`, `30m`, `90s`, `2w` or plain seconds, as whole seconds; a UsageError naming `flag` otherwise. */
export function durationSeconds(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhdw]?)$/.exec(text.trim());
  if (!m) throw new UsageError(`--${flag}: "${text}" is not a duration (e.g. 7d, 12h, 30m, or seconds)`);
  return Math.ceil(Number(m[1]) * (UNIT_SECONDS[m[2] || 's'] ?? 1));
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
