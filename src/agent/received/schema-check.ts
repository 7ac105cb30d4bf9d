/**
 * A TypeBox schema of the protocol compiled once into a check of received
 * values, with the protocol's string formats: what the server validates its
 * input with, applied by the agent to what the server sends it.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { FORMATS } from '../../protocol/index.js';
import { withoutIds } from '../../util/without-ids.js';

/** A value that matched its schema (typed), or why it didn't. `problem` never quotes the value. */
export type CheckResult<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Checks one received value. Never throws; never changes the value. */
export type Check<T> = (value: unknown) => CheckResult<T>;

/** No coercion, no defaults, no removal: the agent checks what it was sent, as it was sent. */
const ajv = new Ajv({ formats: { ...FORMATS }, allErrors: false, coerceTypes: false, useDefaults: false, removeAdditional: false });

/** Ajv's first error as `<JSON pointer> <what was expected>`, without the offending value. */
function firstProblem(errors: readonly ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (!first) return 'does not match the schema';
  const at = first.instancePath === '' ? '(the object)' : first.instancePath;
  // The path may hold keys of the received object: shown like any received text.
  return shownText(`${at} ${first.message ?? 'is invalid'}`, 200);
}

/**
 * The check of `schema` (call at module load or construction, not per
 * value), compiled when it first checks a value: an agent starts without
 * compiling what it may never receive (a renewed token, a tunnel request).
 * `refine` adds checks the schema can't state; it returns a problem or
 * undefined. `test/agent/received-checks.test.ts` compiles them all.
 */
export function compileCheck<S extends TSchema>(schema: S, refine?: (value: Static<S>) => string | undefined): Check<Static<S>> {
  let validate: ValidateFunction<Static<S>> | undefined;
  return (value: unknown): CheckResult<Static<S>> => {
    validate ??= ajv.compile<Static<S>>(withoutIds(schema) as object);
    if (!validate(value)) return { ok: false, problem: firstProblem(validate.errors) };
    const problem = refine?.(value);
    return problem === undefined ? { ok: true, value } : { ok: false, problem: shownText(problem, 200) };
  };
}

/**
 * Text of a received value for logs and the status: printable ASCII only,
 * at most `max` characters, so a value sent to inject lines (or a NUL,
 * which the server refuses in a status) can't reach either as it is.
 */
export function shownText(value: unknown, max = 64): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  const safe = text.replace(/[^\x20-\x7e]/g, '?');
  return safe.length > max ? `${safe.slice(0, max)}...` : safe;
}

/** A received value failed its schema; `message` names what it was and where it fails, never the value. */
export class InvalidReceivedError extends Error {
  override readonly name = 'InvalidReceivedError';
  constructor(
    readonly what: string,
    readonly problem: string,
  ) {
    super(`the server sent an invalid ${what}: ${problem}`);
  }
}

/** The value when it passes `check`; throws InvalidReceivedError otherwise. */
export function accepted<T>(check: Check<T>, value: unknown, what: string): T {
  const result = check(value);
  if (!result.ok) throw new InvalidReceivedError(what, result.problem);
  return result.value;
}
