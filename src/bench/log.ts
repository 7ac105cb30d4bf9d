import pino from 'pino';

/** Progress and diagnostics of the harness (stderr; tables go to stdout). */
export const log = pino(
  {
    level: process.env['BENCH_LOG_LEVEL'] ?? 'info',
    base: undefined,
    formatters: { level: (label) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  },
  pino.destination(2),
);
