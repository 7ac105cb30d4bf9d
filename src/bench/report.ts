import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MachineInfo } from './machine.js';
import type { BenchOptions, ScenarioResult, Table, TargetResult } from './scenario.js';
import { fmt } from './format.js';

/** Renders a table with aligned columns (numbers right-aligned). */
export function renderTable(t: Table): string {
  const cells = t.rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = t.columns.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  const sep = widths.map((w) => '-'.repeat(w)).join('  ');
  return [`${t.title}`, line(t.columns), sep, ...cells.map(line)].join('\n');
}

export function renderTargets(targets: readonly TargetResult[]): string {
  if (targets.length === 0) return '';
  return targets
    .map((t) => `${t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.target} — measured ${fmt(t.measured)} (limit ${fmt(t.limit)}); ${t.detail}`)
    .join('\n');
}

/** The result file: everything needed to compare it with another machine or build. */
export interface ResultFile {
  scenario: string;
  date: string;
  durationSeconds: number;
  machine: MachineInfo;
  command: string[];
  options: BenchOptions;
  error?: string;
  result: ScenarioResult | undefined;
}

/** Writes `<outDir>/<scenario>-<date>.json`; returns the path. */
export function writeResult(outDir: string, file: ResultFile): string {
  mkdirSync(outDir, { recursive: true });
  const stamp = file.date.replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const path = join(outDir, `${file.scenario}-${stamp}.json`);
  writeFileSync(path, `${JSON.stringify(file, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  return path;
}
