/** Number formatting for tables: fixed significant digits, thousands separators, NaN as "–". */
export function fmt(n: number, digits = 3): string {
  if (Number.isNaN(n)) return '–';
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US');
  if (abs === 0) return '0';
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(abs)));
  return n.toFixed(Math.min(decimals, 4));
}

export function fmtBytes(n: number): string {
  if (Number.isNaN(n)) return '–';
  const abs = Math.abs(n);
  if (abs >= 1024 ** 3) return `${fmt(n / 1024 ** 3)} GiB`;
  if (abs >= 1024 ** 2) return `${fmt(n / 1024 ** 2)} MiB`;
  if (abs >= 1024) return `${fmt(n / 1024)} KiB`;
  return `${fmt(n)} B`;
}

/** "median (min–max)". */
export function fmtSpread(s: { median: number; min: number; max: number }, f: (n: number) => string = (n) => fmt(n)): string {
  if (Number.isNaN(s.median)) return '–';
  if (s.min === s.max) return f(s.median);
  return `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}
