/**
 * Values JSON and query strings can carry but nothing downstream can hold:
 * PostgreSQL text and jsonb refuse NUL and unpaired surrogates (a 500 at
 * write time), an unpaired surrogate has no UTF-8 encoding, and Ajv's
 * coercion lets `Infinity` through the bounds of a query number.
 */

/**
 * Far deeper than any schema nests. A body without a schema (an agent call's
 * params) is serialized again, and JSON.stringify overflows the stack on a
 * value thousands of levels deep, which a 1 MiB body can be.
 */
const MAX_DEPTH = 64;

const ILL_FORMED_STRING = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const WELL_FORMED_STRING = 'a string without NUL characters or unpaired surrogates';
const WELL_FORMED_KEYS = 'field names without NUL characters or unpaired surrogates';
const FINITE_NUMBER = 'a finite number';

export interface IllFormed {
  /** JSON pointer of the value (or of the object whose key is ill-formed). */
  path: string;
  expected: string;
}

interface Visit {
  value: unknown;
  key: string | undefined;
  parent: Visit | undefined;
  depth: number;
}

function pointer(visit: Visit | undefined): string {
  const keys: string[] = [];
  for (let v = visit; v?.key !== undefined; v = v.parent) keys.push(v.key.replace(/~/g, '~0').replace(/\//g, '~1'));
  return keys.length === 0 ? '' : `/${keys.reverse().join('/')}`;
}

/**
 * Whether `value` has no ill-formed part (see findIllFormed). Allocates
 * nothing, since it runs on every status frame and body: the recursion is
 * bounded by MAX_DEPTH, past which the value is not well-formed anyway.
 */
export function isWellFormed(value: unknown): boolean {
  return wellFormedFrom(value, 0);
}

function wellFormedFrom(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return !ILL_FORMED_STRING.test(value);
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return true;
  if (depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!wellFormedFrom(value[i], depth + 1)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    if (ILL_FORMED_STRING.test(key) || !wellFormedFrom(record[key], depth + 1)) return false;
  }
  return true;
}

/**
 * The first ill-formed part of `root`: a string (value or key) with a NUL or
 * an unpaired surrogate, a number that isn't finite, or nesting deeper than
 * MAX_DEPTH.
 */
export function findIllFormed(root: unknown): IllFormed | undefined {
  return isWellFormed(root) ? undefined : locateIllFormed(root);
}

/** findIllFormed's search for the path. Iterative, so a deep value can't overflow the stack here. */
export function locateIllFormed(root: unknown): IllFormed | undefined {
  const stack: Visit[] = [{ value: root, key: undefined, parent: undefined, depth: 0 }];
  for (let visit = stack.pop(); visit !== undefined; visit = stack.pop()) {
    const { value, depth } = visit;
    if (typeof value === 'string') {
      if (ILL_FORMED_STRING.test(value)) return { path: pointer(visit), expected: WELL_FORMED_STRING };
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) return { path: pointer(visit), expected: FINITE_NUMBER };
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= MAX_DEPTH) return { path: pointer(visit), expected: `at most ${MAX_DEPTH} levels of nesting` };
      const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] ?? ['', undefined];
        if (ILL_FORMED_STRING.test(key)) return { path: pointer(visit), expected: WELL_FORMED_KEYS };
        stack.push({ value: child, key, parent: visit, depth: depth + 1 });
      }
    }
  }
  return undefined;
}
