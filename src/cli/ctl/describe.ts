import { toYaml } from './yaml-text.js';

/**
 * One object for people, as `kubectl describe` shows one: a field a line,
 * `key:` and its value aligned, in a stable order; a nested object or list
 * as indented YAML under its key. `-o json|yaml` print the object as sent
 * instead, so scripts never depend on this.
 *
 * The order: `id`, then the name (`name`, `hostname`), then the fields the
 * resource lists (`order`, in its order), then every other field
 * alphabetically, then `revision` and `created_by`, then the timestamps
 * (`created_at`, `updated_at`, then other `*_at` alphabetically). A field a
 * newer server adds lands among the others, never reshuffling the rest.
 */
export function describeObject(value: object, order: readonly string[] = []): string {
  const fields = orderedFields(value, order);
  const width = Math.max(0, ...fields.filter(([, v]) => !isNested(v)).map(([k]) => k.length + 1));
  return fields.map(([key, v]) => (isNested(v) ? `${key}:\n${indent(block(v))}` : `${`${key}:`.padEnd(width)}  ${scalar(v)}\n`)).join('');
}

const NAMES = ['id', 'name', 'hostname'];
const TRAILING = ['revision', 'created_by'];
const TIMESTAMPS = ['created_at', 'updated_at'];

const isTimestamp = (key: string): boolean => key.endsWith('_at');
const alphabetical = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The fields of `value` (undefined ones left out) in describeObject's order. */
export function orderedFields(value: object, order: readonly string[] = []): Array<[string, unknown]> {
  const entries = new Map(Object.entries(value).filter(([, v]) => v !== undefined));
  const placed = [...NAMES, ...order];
  const rest = [...entries.keys()].filter((k) => !placed.includes(k) && !TRAILING.includes(k) && !TIMESTAMPS.includes(k));
  const keys = [
    ...placed,
    ...rest.filter((k) => !isTimestamp(k)).sort(alphabetical),
    ...TRAILING,
    ...TIMESTAMPS,
    ...rest.filter(isTimestamp).sort(alphabetical),
  ];
  const seen = new Set<string>();
  const out: Array<[string, unknown]> = [];
  for (const key of keys) {
    if (seen.has(key) || !entries.has(key)) continue;
    seen.add(key);
    out.push([key, entries.get(key)]);
  }
  return out;
}

/** A non-empty object or list, or text of several lines: shown as a block under its key (an empty list fits on its line as `[]`). */
function isNested(v: unknown): boolean {
  if (typeof v === 'string') return v.includes('\n');
  if (v === null || typeof v !== 'object') return false;
  return Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0;
}

/** Text as its lines; a structure as YAML. */
function block(v: unknown): string {
  if (typeof v === 'string') return v.endsWith('\n') ? v : `${v}\n`;
  return toYaml(v);
}

function scalar(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (Array.isArray(v)) return '[]';
  if (typeof v === 'object') return '{}';
  if (typeof v === 'string') return v;
  return String(v);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}
