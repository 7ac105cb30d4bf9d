import type { Writable } from './writable.js';

/** A value as one table cell: `-` for nothing, JSON for structures. */
export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function widthsOf(headers: readonly string[], rows: readonly (readonly string[])[], min: readonly number[] = []): number[] {
  return headers.map((h, i) => Math.max(h.length, min[i] ?? 0, ...rows.map((r) => (r[i] ?? '').length)));
}

function line(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
    .join('  ')
    .trimEnd();
}

/** Left-aligned columns separated by two spaces; the last column isn't padded. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = widthsOf(headers, rows);
  return [line(headers, widths), ...rows.map((r) => line(r, widths))].join('\n') + '\n';
}

/**
 * A table printed as it grows (`--watch`): the first rows set the column
 * widths, later rows are padded to them (a longer cell just pushes the rest
 * of its line), like `kubectl get -w`.
 */
export class TableStream {
  readonly #widths: number[];

  constructor(
    private readonly out: Writable,
    headers: readonly string[],
    rows: readonly (readonly string[])[] = [],
    minWidths: readonly number[] = [],
  ) {
    this.#widths = widthsOf(headers, rows, minWidths);
    out.write(`${[line(headers, this.#widths), ...rows.map((r) => line(r, this.#widths))].join('\n')}\n`);
  }

  row(cells: readonly string[]): void {
    this.out.write(`${line(cells, this.#widths)}\n`);
  }
}
