import type { Convergence, ConvergenceEvent } from '../protocol/wire.js';
import type { ProtocolError } from './errors.js';
import { errorLineValue, invalidLine, lineObject } from './stream-line.js';
import { isRecord, isRevision } from './guards.js';

/** Counts every Convergence carries. */
const COUNTS = ['devices', 'at_head', 'behind', 'error', 'stale', 'online'] as const;

const invalid = (line: string, why: string): ProtocolError => invalidLine('convergence', line, why);

/**
 * Whether `v` has what the SDK promises of a Convergence: a revision, the
 * six counts as non-negative integers, and a `not_converged` array. The
 * entries of `not_converged` and fields this SDK doesn't know are the
 * server's contract and pass unchecked.
 */
export function isConvergence(v: unknown): v is Convergence {
  return isRecord(v) && isRevision(v['revision']) && COUNTS.every((k) => isRevision(v[k])) && Array.isArray(v['not_converged']);
}

/**
 * Parses one line of `GET .../convergence?watch=true`. Anything that isn't a
 * ConvergenceEvent (not JSON, unknown type, a value without the counts, an
 * error with an unknown code) throws ProtocolError: a line is never skipped.
 */
export function parseConvergenceLine(line: string): ConvergenceEvent {
  const { type, value } = lineObject('convergence', line);
  if (type === 'convergence') {
    if (!isConvergence(value)) throw invalid(line, 'value without revision and counts');
    return { type, value };
  }
  if (type === 'error') {
    if (!isRecord(value)) throw invalid(line, 'value is not an object');
    return { type, value: errorLineValue('convergence', line, value) };
  }
  throw invalid(line, 'unknown type');
}
