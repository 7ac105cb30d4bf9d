/** The CLI log: pretty single lines on a terminal, pino's JSON elsewhere. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { cliLogger } from '../../src/cli/cli-logger.js';
import { prettyLine } from '../../src/cli/pretty-log.js';

/** A stream that keeps what is written; `isTTY` as a terminal's or a pipe's. */
function sink(isTTY: boolean): Writable & { isTTY: boolean; text: () => string } {
  const chunks: string[] = [];
  const w = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return Object.assign(w, { isTTY, text: () => chunks.join('') });
}

describe('prettyLine', () => {
  it('writes time, level, message and fields on one line, hiding pid, hostname and service', () => {
    const time = new Date(2026, 0, 2, 3, 4, 5, 67).getTime();
    const line = prettyLine(
      JSON.stringify({ level: 30, time, pid: 1, hostname: 'h', service: 'fleetplane', component: 'gateway', msg: 'tunnel connected', url: 'wss://x/api', connections: 2, note: 'two words' }),
      { color: false },
    );
    expect(line).toBe('03:04:05.067 INFO  tunnel connected component=gateway url=wss://x/api connections=2 note="two words"\n');
  });

  it('shows an error as its type and message; its stack only on error and fatal lines', () => {
    const err = { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:1', stack: 'Error: connect ECONNREFUSED\n    at one (a.js:1:1)\n    at two (b.js:2:2)' };
    const warn = prettyLine(JSON.stringify({ level: 40, time: 0, msg: 'retrying', err }), { color: false });
    expect(warn.split('\n')).toHaveLength(2);
    expect(warn).toContain('WARN  retrying err="Error: connect ECONNREFUSED 127.0.0.1:1"');
    const error = prettyLine(JSON.stringify({ level: 50, time: 0, msg: 'failed', err }), { color: false });
    expect(error.split('\n').slice(1)).toEqual(['    at one (a.js:1:1)', '    at two (b.js:2:2)', '']);
  });

  it('colours the level only when asked, and passes a line that is not JSON through', () => {
    expect(prettyLine(JSON.stringify({ level: 40, time: 0, msg: 'm' }), { color: true })).toContain('\u001b[33mWARN \u001b[39m');
    expect(prettyLine(JSON.stringify({ level: 40, time: 0, msg: 'm' }), { color: false })).not.toContain('\u001b[');
    expect(prettyLine('plain text', { color: true })).toBe('plain text\n');
  });
});

describe('cliLogger', () => {
  it('is pretty on a terminal (colourless with NO_COLOR) and JSON on anything else', () => {
    const tty = sink(true);
    cliLogger({ level: 'info', base: { service: 'fleetplane' }, stream: tty, env: { NO_COLOR: '1' } }).info({ port: 8080 }, 'listening');
    expect(tty.text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  listening port=8080\n$/);

    const pipe = sink(false);
    const log = cliLogger({ level: 'info', base: { service: 'fleetplane' }, stream: pipe, env: {} });
    log.info({ port: 8080 }, 'listening');
    log.debug('below the level');
    const lines = pipe.text().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ level: 30, service: 'fleetplane', port: 8080, msg: 'listening' });
  });
});
