/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b`. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, ((d[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = best;
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/**
 * The one of `names` nearest to `typed`, for a "did you mean" under an
 * unknown flag or command: within a third of its length in edits (at least
 * one), and only when no other name is as near. Undefined otherwise.
 */
export function nearestName(typed: string, names: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(typed.length / 3));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  let tie = false;
  for (const name of names) {
    const e = distance(typed, name);
    if (e < bestDistance) {
      best = name;
      bestDistance = e;
      tie = false;
    } else if (e === bestDistance) tie = true;
  }
  return best !== undefined && bestDistance <= limit && !tie ? best : undefined;
}

/** ` (did you mean --<name>?)` for an unknown `--flag`, or an empty string. */
export function didYouMeanFlag(raw: string, flags: Iterable<string>): string {
  if (!raw.startsWith('--')) return '';
  const near = nearestName(raw.slice(2).split('=')[0] ?? '', flags);
  return near === undefined ? '' : ` (did you mean --${near}?)`;
}
