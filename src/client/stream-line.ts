import { isErrorCode, type ErrorCode } from '../protocol/wire.js';
import { ProtocolError } from './errors.js';
import { isRecord } from './guards.js';

const SHOWN = 200;

/** The ProtocolError for a line of a `stream=watch` response that isn't what the contract says. */
export function invalidLine(stream: string, line: string, why: string, cause?: unknown): ProtocolError {
  const shown = line.length > SHOWN ? `${line.slice(0, SHOWN)}…` : line;
  return new ProtocolError({
    code: 'invalid_response',
    message: `invalid ${stream} line (${why}): ${shown}`,
    details: { line: shown },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** One line as a JSON object; throws ProtocolError when it is not JSON or not an object. */
export function lineObject(stream: string, line: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch (err) {
    throw invalidLine(stream, line, 'not JSON', err);
  }
  if (!isRecord(doc)) throw invalidLine(stream, line, 'not an object');
  return doc;
}

/** The value of an `error` line (the last line of a stream); throws ProtocolError for an unknown code. */
export function errorLineValue(stream: string, line: string, value: Record<string, unknown>): { code: ErrorCode; message: string } {
  const { code, message } = value;
  if (!isErrorCode(code)) throw invalidLine(stream, line, 'error with an unknown code');
  return { code, message: typeof message === 'string' ? message : '' };
}
