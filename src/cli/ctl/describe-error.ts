import { FleetplaneError } from '../../client/index.js';

/** Whitespace runs (newlines included) as one space: every message is one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** An error on one line: the message, and for API errors the code and HTTP status, e.g. `device not found (not_found, HTTP 404)`. */
export function describeError(err: unknown): string {
  if (err instanceof FleetplaneError) {
    const status = err.status ? `, HTTP ${err.status}` : '';
    return oneLine(`${err.message} (${err.code}${status})`);
  }
  return oneLine(err instanceof Error ? err.message : String(err));
}

/** The line a watch prints on stderr before it tries again. */
export function reconnectingLine(attempt: number, delayMs: number, error: unknown): string {
  return `reconnecting… (attempt ${attempt}, next try in ${(delayMs / 1000).toFixed(1)}s): ${describeError(error)}\n`;
}
