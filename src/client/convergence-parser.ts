import { isErrorCode, type Convergence, type ConvergenceEvent } from '../protocol/index.js';
import { ProtocolError } from './errors.js';
import { isRecord, isRevision } from './guards.js';

const SHOWN = 200;

/** Counts every Convergence carries. */
const COUNTS = ['devices', 'at_head', 'behind', 'error', 'stale', 'online'] as const;

function invalid(line: string, why: string, cause?: unknown): ProtocolError {
  const shown = line.length > SHOWN ? `${line.slice(0, SHOWN)}…` : line;
  return new ProtocolError({
    code: 'invalid_response',
    message: `invalid convergence line (${why}): ${shown}`,
    details: { line: shown },
    ...(cause === undefined ? {} : { cause }),
  });
}

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
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch (err) {
    throw invalid(line, 'not JSON', err);
  }
  if (!isRecord(doc)) throw invalid(line, 'not an object');
  const { type, value } = doc;
  if (type === 'convergence') {
    if (!isConvergence(value)) throw invalid(line, 'value without revision and counts');
    return { type, value };
  }
  if (type === 'error') {
    if (!isRecord(value)) throw invalid(line, 'value is not an object');
    const { code, message } = value;
    if (!isErrorCode(code)) throw invalid(line, 'error with an unknown code');
    return { type, value: { code, message: typeof message === 'string' ? message : '' } };
  }
  throw invalid(line, 'unknown type');
}
