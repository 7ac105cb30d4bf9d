import { UsageError } from '../exit-codes.js';
import { describeObject } from './describe.js';
import { cell, formatTable } from './table.js';
import { toYaml } from './yaml-text.js';
import type { Writable } from './writable.js';

export type { Writable } from './writable.js';

export const OUTPUT_MODES = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputMode = (typeof OUTPUT_MODES)[number];

export function parseOutputMode(text: string | undefined): OutputMode {
  if (text === undefined) return 'table';
  const mode = OUTPUT_MODES.find((m) => m === text);
  if (mode === undefined) throw new UsageError(`--output must be one of ${OUTPUT_MODES.join(', ')}, not ${JSON.stringify(text)}`);
  return mode;
}

/** A table column; `wide` ones appear only with `-o wide`. `now` is for relative times. */
export interface Column<T> {
  header: string;
  value: (row: T, now: number) => unknown;
  wide?: boolean;
}

/**
 * Renders results: tables for people (`table`, `wide`), documents for
 * scripts (`json`: indented, or one line per event when watching; `yaml`).
 */
export class Output {
  constructor(
    readonly mode: OutputMode,
    private readonly out: Writable,
    readonly now: () => number = Date.now,
  ) {}

  get forPeople(): boolean {
    return this.mode === 'table' || this.mode === 'wide';
  }

  /** The columns this mode shows. */
  columns<T>(columns: ReadonlyArray<Column<T>>): Array<Column<T>> {
    return columns.filter((c) => c.wide !== true || this.mode === 'wide');
  }

  /** Cells of one row, as strings. */
  cells<T>(row: T, columns: ReadonlyArray<Column<T>>): string[] {
    const now = this.now();
    return columns.map((c) => cell(c.value(row, now)));
  }

  list<T>(items: readonly T[], columns: ReadonlyArray<Column<T>>): void {
    if (!this.forPeople) return this.document(items);
    const shown = this.columns(columns);
    this.out.write(formatTable(shown.map((c) => c.header), items.map((item) => this.cells(item, shown))));
  }

  /**
   * One object: for people a field a line in a stable order, `id` and the
   * name first, the fields `order` names next, timestamps last, nested
   * values as YAML (describe.ts); for scripts the object as sent.
   */
  object(value: object, order: readonly string[] = []): void {
    if (!this.forPeople) return this.document(value);
    this.out.write(describeObject(value, order));
  }

  /** A confirmation for people; the given value for scripts. */
  done(message: string, value: unknown): void {
    if (this.forPeople) this.line(message);
    else this.document(value);
  }

  /** A whole value as JSON (indented) or YAML. */
  document(value: unknown): void {
    this.out.write(this.mode === 'yaml' ? toYaml(value) : `${JSON.stringify(value, null, 2)}\n`);
  }

  /** One value of a stream: a JSON line, or a YAML document after `---`. */
  streamed(value: unknown): void {
    this.out.write(this.mode === 'yaml' ? `---\n${toYaml(value)}` : `${JSON.stringify(value)}\n`);
  }

  line(text: string): void {
    this.out.write(`${text}\n`);
  }

  /** The raw writer (for tables printed as they grow). */
  get writer(): Writable {
    return this.out;
  }
}
