import { Writable } from 'node:stream';
import type { Logger } from 'pino';

/** A line longer than this is cut: PostgreSQL's stderr can't grow the buffer without bound. */
const LINE_MAX = 8192;

/**
 * Turns PostgreSQL's stderr into structured log lines. ERROR lines are
 * the clients' own failures (a unique violation is a 409 to a user), so
 * they stay at debug; FATAL and PANIC are the server's and go to error.
 */
export function postgresLogSink(logger: Logger): Writable {
  let partial = '';
  const emit = (line: string): void => {
    if (line.length === 0) return;
    // A connection tried while PostgreSQL starts is refused with FATAL; that is the readiness probe.
    if (line.includes('the database system is starting up')) logger.debug({ postgres: line }, 'postgres');
    else if (/\b(PANIC|FATAL):/.test(line)) logger.error({ postgres: line }, 'postgres');
    else if (/\bWARNING:/.test(line)) logger.warn({ postgres: line }, 'postgres');
    else logger.debug({ postgres: line }, 'postgres');
  };
  return new Writable({
    decodeStrings: false,
    write(chunk: Buffer | string, _enc, done) {
      const lines = (partial + chunk.toString()).split('\n');
      partial = (lines.pop() ?? '').slice(0, LINE_MAX);
      for (const line of lines) emit(line.slice(0, LINE_MAX));
      done();
    },
    final(done) {
      emit(partial);
      partial = '';
      done();
    },
  });
}
