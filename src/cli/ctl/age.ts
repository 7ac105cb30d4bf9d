/**
 * How long ago `timestamp` was, in the short form of kubectl's AGE column:
 * `5s`, `3m`, `2h`, `4d`, `1y`. `never` for a missing time; a time in the
 * future (clocks disagree) counts as `0s`.
 */
export function age(timestamp: string | null | undefined, now: number): string {
  if (timestamp === null || timestamp === undefined) return 'never';
  const at = Date.parse(timestamp);
  if (Number.isNaN(at)) return '?';
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}
