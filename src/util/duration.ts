/** Seconds per unit of a duration: `ms`, `s`, `m`, `h`, `d`, `w`. */
const UNIT_SECONDS: Readonly<Record<string, number>> = { ms: 0.001, s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };

/**
 * A duration as the command lines and environment variables of `serve`,
 * `agent` and `ctl` take it, in seconds: plain seconds (`90`, `0.25`), or
 * numbers with units, Go-style and in any order of size (`500ms`, `30s`,
 * `10m`, `1h30m`, `7d`, `2w`). Undefined when `text` is none of those.
 */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(t)) return Number(t);
  if (t === '') return undefined;
  // Sticky: each part starts where the last ended, so nothing in between goes unread.
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/y;
  let seconds = 0;
  while (part.lastIndex < t.length) {
    const m = part.exec(t);
    if (!m) return undefined;
    seconds += Number(m[1]) * (UNIT_SECONDS[m[2] ?? 's'] ?? 1);
  }
  return seconds;
}

/** What a command's message shows as examples of a duration. */
export const DURATION_EXAMPLES = '30, 10m, 1h30m, 7d';
