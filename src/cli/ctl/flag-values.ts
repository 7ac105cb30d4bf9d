import { readFile } from 'node:fs/promises';
import { UsageError } from '../exit-codes.js';

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

/** A required positional argument. */
export function requireArg(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}

/** No positional arguments beyond the first `count`. */
export function noExtraArgs(args: readonly string[], count: number): void {
  const extra = args[count];
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`);
}

/** A comma-separated list flag (`a,b`); "" is the empty list, absent is undefined. */
export function listFlag(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').map((item) => item.trim()).filter((item) => item !== '');
}
