import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ValidationError, type PolicyChange } from '../../../client/index.js';
import { UsageError } from '../../exit-codes.js';
import type { LocalContext } from '../context.js';

/** A policy document as `-f` gave it: its text, and the name errors show (the path as given, `<stdin>` for `-`). */
export interface DocumentInput {
  name: string;
  text: string;
}

async function readAll(stream: AsyncIterable<string | Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** The document of `-f FILE` (`-f -`: stdin); a usage error when `-f` is missing or the file can't be read. */
export async function readDocument(ctx: LocalContext): Promise<DocumentInput> {
  const file = ctx.flags.string('file');
  if (file === undefined || file === '') throw new UsageError('missing -f FILE (the policy document; - reads stdin)');
  if (file === '-') return { name: '<stdin>', text: await readAll(ctx.stdin) };
  try {
    return { name: file, text: await readFile(resolve(ctx.cwd, file), 'utf8') };
  } catch (err) {
    throw new UsageError(`-f ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const SIGN: Record<PolicyChange['op'], string> = { add: '+', remove: '-', change: '~' };

/** `+ /security_groups/db`, `- /tag_owners/tag:old`, `~ /network/mtu`. */
export function changeLine(change: PolicyChange): string {
  return `${SIGN[change.op]} ${change.path}`;
}

/** A change with its values: the path line, then the old value (`-`) and the new one (`+`), each as one line of JSON. */
export function changeWithValues(change: PolicyChange): string[] {
  const lines = [changeLine(change)];
  if (change.op !== 'add' && change.from !== undefined) lines.push(`    - ${JSON.stringify(change.from)}`);
  if (change.op !== 'remove' && change.to !== undefined) lines.push(`    + ${JSON.stringify(change.to)}`);
  return lines;
}

/** One failing test of `details.failures` (422 `policy_test_failed`), as the server reports it. */
export interface TestFailure {
  index: number;
  test: { from: string; to: string; port: string; expect: string };
  reason: string;
}

function isFailure(v: unknown): v is TestFailure {
  if (typeof v !== 'object' || v === null) return false;
  const f = v as Record<string, unknown>;
  const t = f['test'] as Record<string, unknown> | null | undefined;
  return typeof f['index'] === 'number' && typeof f['reason'] === 'string' && typeof t === 'object' && t !== null && ['from', 'to', 'port', 'expect'].every((k) => typeof t[k] === 'string');
}

/** The failing tests a `policy_test_failed` error carries; undefined for any other error. */
export function testFailures(err: unknown): TestFailure[] | undefined {
  if (!(err instanceof ValidationError) || err.code !== 'policy_test_failed') return undefined;
  const failures = err.details?.['failures'];
  return Array.isArray(failures) ? failures.filter(isFailure) : [];
}

/** `test 2: tag:web -> tag:db tcp:5432, expect allow: <why not>` (the index counts from 0, as the server's). */
export function failureLine(f: TestFailure): string {
  return `test ${f.index}: ${f.test.from} -> ${f.test.to} ${f.test.port}, expect ${f.test.expect}: ${f.reason}`;
}

/**
 * A `policy_invalid` error made to name its place in `name` as compilers do
 * (`policy.yaml:12:7: ...`, or `policy.yaml: ...` when the server gave no
 * line); any other error as it is.
 */
export function locatedError(err: unknown, name: string): unknown {
  if (!(err instanceof ValidationError) || err.code !== 'policy_invalid') return err;
  const line = err.details?.['line'];
  const column = err.details?.['column'];
  const placed = typeof line === 'number' && line > 0;
  // The server's message starts with the place in words; the prefix says it already.
  const message = placed ? err.message.replace(/^line \d+, column \d+: /, '') : err.message;
  const where = placed ? `${name}:${line}:${typeof column === 'number' && column > 0 ? `${column}:` : ''}` : `${name}:`;
  return new ValidationError({ code: err.code, status: err.status, message: `${where} ${message}`, details: err.details, cause: err });
}
