import type { ErrorCode } from '../../protocol/index.js';

/**
 * Stream lines are encoded once, as complete HTTP/1.1 chunks
 * (`<hex length>\r\n<json>\n\r\n`), so one buffer can be written unchanged to
 * every stream's socket (ARCHITECTURE.md, "Serialize once, write many").
 */
export function chunk(json: string): Buffer {
  // One allocation, no temporaries: cached events live as long as their organization's snapshot.
  const bodyLength = Buffer.byteLength(json, 'utf8') + 1;
  const head = `${bodyLength.toString(16)}\r\n`;
  const out = Buffer.allocUnsafe(head.length + bodyLength + 2);
  let at = out.write(head, 0, 'latin1');
  at += out.write(json, at, 'utf8');
  out.write('\n\r\n', at, 'latin1');
  return out;
}

/** The JSON line a chunk made by `chunk` carries, as a view of its bytes (without the newline). */
export function chunkLine(bytes: Buffer): Buffer {
  return bytes.subarray(bytes.indexOf('\r\n') + 2, bytes.length - CHUNK_END.length);
}

/**
 * An empty line: the connection is alive, and nothing more (docs/protocol.md
 * "Watch"). For a stream that has not reached its head, where a bookmark
 * would claim a consistency the stream doesn't have yet.
 */
export const KEEPALIVE = Buffer.from('1\r\n\n\r\n', 'latin1');

/** How every chunk ends: the line's `\n`, then the chunk's CRLF (a JSON line has no raw newline, so this is found only there). */
export const CHUNK_END = Buffer.from('\n\r\n', 'latin1');

/** The chunk that ends a chunked body. */
export const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');

/** A stream's `error` line: the last it sends. */
export function encodeError(code: ErrorCode, message: string): Buffer {
  return chunk(JSON.stringify({ type: 'error', value: { code, message } }));
}

/** Response head of a stream; the connection closes when the stream ends. */
export function responseHead(contentType: string): Buffer {
  return Buffer.from(
    `HTTP/1.1 200 OK\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n`,
    'latin1',
  );
}
