import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { UsageError } from './usage.js';

const OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  org: { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
  data: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  hostname: { type: 'string' },
  'public-key': { type: 'string' },
  'if-match': { type: 'string' },
  role: { type: 'string' },
  'single-use': { type: 'boolean' },
  'expires-at': { type: 'string' },
  params: { type: 'string' },
  wait: { type: 'string' },
  'gt-revision': { type: 'string' },
} as const;

export type OutputMode = 'table' | 'json';

export interface CtlArgs {
  positionals: string[];
  values: ReturnType<typeof parse>['values'];
  output: OutputMode;
  help: boolean;
}

function parse(argv: readonly string[]) {
  return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
}

export function parseCtlArgs(argv: readonly string[]): CtlArgs {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    // parseArgs reports unknown options and missing values as TypeErrors with a readable message.
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const output = parsed.values.output ?? 'table';
  if (output !== 'table' && output !== 'json') throw new UsageError(`--output must be table or json, not ${JSON.stringify(output)}`);
  return { positionals: parsed.positionals, values: parsed.values, output, help: parsed.values.help === true };
}

/** A non-negative integer flag, or undefined when absent. */
export function intFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, not ${JSON.stringify(value)}`);
  return Number(value);
}

export function jsonObjectFlag(name: string, text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--${name} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError(`--${name} must be a JSON object`);
  return parsed as Record<string, unknown>;
}

/** `--data` as an object: inline JSON, or `@path` to read it from a file. */
export async function dataFlag(value: string | undefined): Promise<Record<string, unknown>> {
  if (value === undefined) return {};
  if (!value.startsWith('@')) return jsonObjectFlag('data', value);
  let text: string;
  try {
    text = await readFile(value.slice(1), 'utf8');
  } catch (err) {
    throw new UsageError(`--data ${value}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return jsonObjectFlag('data', text);
}

/** Drops undefined fields, so flags left out don't override `--data`. */
export function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

export function requireArg(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}
