/**
 * Pino's JSON lines, rewritten for a person at a terminal: one line each,
 * `HH:MM:SS.mmm LEVEL message key=value ...`, the level in colour. A few
 * dozen lines instead of pino-pretty and its dependencies.
 */
import type { DestinationStream } from 'pino';

const LEVELS: Readonly<Record<number, { name: string; color: string }>> = {
  10: { name: 'TRACE', color: '90' },
  20: { name: 'DEBUG', color: '36' },
  30: { name: 'INFO', color: '32' },
  40: { name: 'WARN', color: '33' },
  50: { name: 'ERROR', color: '31' },
  60: { name: 'FATAL', color: '35' },
};

/** Fields every line has, shown in their own places or not at all (the same for every line of a process). */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service']);

export interface PrettyOptions {
  /** ANSI colours for the level. */
  color: boolean;
}

function clock(time: unknown): string {
  const d = typeof time === 'number' ? new Date(time) : new Date();
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * One pino JSON line as text ending in a newline. An `err` field shows as
 * its type and message; its stack follows, indented, on error and fatal
 * lines only. A line that isn't pino JSON passes through unchanged.
 */
export function prettyLine(line: string, o: PrettyOptions): string {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  if (!isRecord(rec)) return line.endsWith('\n') ? line : `${line}\n`;
  const level = typeof rec['level'] === 'number' ? rec['level'] : 30;
  const known = LEVELS[level] ?? { name: String(level), color: '0' };
  const name = known.name.padEnd(5);
  const parts = [clock(rec['time']), o.color ? `\u001b[${known.color}m${name}\u001b[39m` : name];
  if (typeof rec['msg'] === 'string' && rec['msg'] !== '') parts.push(rec['msg']);
  let stack = '';
  for (const [k, v] of Object.entries(rec)) {
    if (HIDDEN.has(k) || v === undefined) continue;
    if (k === 'err' && isRecord(v)) {
      parts.push(`err=${value(`${typeof v['type'] === 'string' ? `${v['type']}: ` : ''}${String(v['message'] ?? '')}`)}`);
      if (level >= 50 && typeof v['stack'] === 'string') stack = v['stack'].split('\n').slice(1).map((s) => `    ${s.trim()}\n`).join('');
      continue;
    }
    parts.push(`${k}=${value(v)}`);
  }
  return `${parts.join(' ')}\n${stack}`;
}

/** A pino destination that writes pretty lines to `out`. */
export function prettyDestination(out: { write(text: string): unknown }, o: PrettyOptions): DestinationStream {
  return { write: (line: string) => void out.write(prettyLine(line, o)) };
}
