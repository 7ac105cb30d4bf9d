/**
 * The log of `fleetplane serve` and `fleetplane agent`. Logs go to stderr,
 * so stdout carries only what a command prints for its caller (serve's
 * banner: its URL and the admin token) and the two never interleave. On a
 * terminal the lines are pretty (see pretty-log.ts); anywhere else (a pipe,
 * a file, journald) they stay pino's JSON, one object per line.
 */
import pino, { type Level, type Logger } from 'pino';
import { prettyDestination } from './pretty-log.js';

export interface CliLoggerOptions {
  level: Level | 'silent';
  /** Fields on every line (e.g. `{ service: 'fleetplane' }`). */
  base: Record<string, unknown>;
  /** Where lines go; default process.stderr. Pretty when it is a TTY. */
  stream?: NodeJS.WritableStream & { isTTY?: boolean; fd?: number };
  /** The environment (NO_COLOR turns colours off). */
  env?: Readonly<Record<string, string | undefined>>;
}

export function cliLogger(o: CliLoggerOptions): Logger {
  const stream = o.stream ?? process.stderr;
  const env = o.env ?? process.env;
  const options = { level: o.level, base: o.base };
  if (stream.isTTY === true) {
    const noColor = env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '';
    return pino(options, prettyDestination(stream, { color: !noColor }));
  }
  // Synchronous on a file descriptor: a fatal line written just before exit is not lost.
  if (stream.fd !== undefined) return pino(options, pino.destination({ dest: stream.fd, sync: true }));
  return pino(options, stream);
}
