import { ProtocolError } from './errors.js';

/** Default bound of one watch line: far above any object the server accepts, far below memory trouble. */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

export interface LineReaderOptions {
  /** A line longer than this (bytes, terminator excluded) fails with ProtocolError `line_too_long`. */
  maxLineBytes?: number | undefined;
}

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into `\n`-terminated lines and decodes each as UTF-8
 * (invalid UTF-8 fails with ProtocolError `invalid_response`). A trailing
 * `\r` is removed; a last line without terminator is still yielded. Lines are
 * split on bytes, so a chunk boundary inside a multi-byte character is
 * harmless. At most `maxLineBytes` are buffered. Stops reading (cancels the
 * stream) when the consumer stops early; read errors (a cut connection, an
 * abort) propagate unchanged.
 */
export async function* readLines(
  stream: ReadableStream<Uint8Array>,
  opts: LineReaderOptions = {},
): AsyncGenerator<string, void, undefined> {
  const max = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const reader = stream.getReader();
  let parts: Uint8Array[] = [];
  let size = 0;
  let finished = false;

  const take = (last: Uint8Array): string => {
    const bytes = join(parts, size, last);
    parts = [];
    size = 0;
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch (err) {
      throw new ProtocolError({ code: 'invalid_response', message: 'watch line is not valid UTF-8', cause: err });
    }
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  const tooLong = (): ProtocolError =>
    new ProtocolError({ code: 'line_too_long', message: `watch line longer than ${max} bytes`, details: { max_line_bytes: max } });

  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        finished = true;
        break;
      }
      const chunk = r.value;
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        if (size + (nl - start) > max) throw tooLong();
        const line = take(chunk.subarray(start, nl));
        start = nl + 1;
        yield line;
      }
      if (start < chunk.length) {
        if (size + (chunk.length - start) > max) throw tooLong();
        // Copied: the chunk's buffer belongs to the stream.
        parts.push(chunk.slice(start));
        size += chunk.length - start;
      }
    }
    if (size > 0) yield take(new Uint8Array(0));
  } finally {
    if (!finished) {
      // Releases the connection when the consumer stops early or we failed; a stream that
      // already errored rejects the cancel, and that error has already been thrown to the caller.
      await reader.cancel().catch(() => undefined);
    }
  }
}

function join(parts: Uint8Array[], size: number, last: Uint8Array): Uint8Array {
  if (parts.length === 0) return last;
  const out = new Uint8Array(size + last.length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  out.set(last, at);
  return out;
}
