import { fmt, fmtSpread } from '../format.js';
import { spread } from '../stats.js';

/**
 * A table cell for one figure over the changes of a loop: "median (min–max)"
 * when every change has it; else how many timed out, with the spread of the
 * others.
 */
export function overChanges(values: readonly number[], f: (n: number) => string = (n) => fmt(n)): string {
  const ok = values.filter((v) => !Number.isNaN(v));
  if (ok.length === values.length) return fmtSpread(spread(ok), f);
  if (ok.length === 0) return `timeout (${values.length} of ${values.length})`;
  return `timeout ${values.length - ok.length} of ${values.length}; others ${fmtSpread(spread(ok), f)}`;
}

export function ms(n: number): string {
  return Number.isNaN(n) ? '–' : `${fmt(n)} ms`;
}

export function seconds(n: number): string {
  return Number.isNaN(n) ? '–' : `${fmt(n)} s`;
}

export function count(n: number): string {
  return Number.isNaN(n) ? '–' : Math.round(n).toLocaleString('en-US');
}
