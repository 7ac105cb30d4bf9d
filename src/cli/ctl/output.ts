import type { OutputMode } from './args.js';

/** Where ctl writes: anything with `write(string)` (process.stdout, a test buffer). */
export interface Writable {
  write(chunk: string): unknown;
}

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Left-aligned columns separated by two spaces; the last column isn't padded. */
export function formatTable(headers: readonly string[], rows: readonly string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/** Renders results as tables/fields for people or JSON for scripts. */
export class Output {
  constructor(
    readonly mode: OutputMode,
    private readonly out: Writable,
  ) {}

  list<T>(items: readonly T[], columns: ReadonlyArray<Column<T>>): void {
    if (this.mode === 'json') return void this.out.write(`${JSON.stringify(items, null, 2)}\n`);
    this.out.write(formatTable(columns.map((c) => c.header), items.map((item) => columns.map((c) => cell(c.value(item))))));
  }

  /** One object: a FIELD/VALUE listing for people. */
  object(value: object): void {
    if (this.mode === 'json') return void this.out.write(`${JSON.stringify(value, null, 2)}\n`);
    const rows = Object.entries(value).map(([k, v]) => [k, cell(v)]);
    this.out.write(formatTable(['FIELD', 'VALUE'], rows));
  }

  /** A confirmation for people; the given JSON for scripts. */
  done(message: string, json: unknown): void {
    this.out.write(this.mode === 'json' ? `${JSON.stringify(json)}\n` : `${message}\n`);
  }

  line(text: string): void {
    this.out.write(`${text}\n`);
  }
}
