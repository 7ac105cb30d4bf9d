import type { ChangeEvent, DeleteEvent, GzipEvent, PatchEvent } from '../protocol/wire.js';
import { invalidLine } from './stream-line.js';
import { parseWatchLine } from './watch-event-parser.js';

/** What a `gzip` event may stand for: an object event of its own kind. */
export type PackedEvent = ChangeEvent | PatchEvent | DeleteEvent;

export function base64Bytes(data: string): Uint8Array<ArrayBuffer> {
  const text = atob(data);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

export async function gunzip(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  // DecompressionStream: the same code in Node.js (18+) and the dashboard's browser.
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}

/**
 * The event a `gzip` event stands for (docs/protocol.md "Watch"): its
 * `data` unpacked and parsed as a line of the stream. Throws ProtocolError when `data`
 * is not gzip of a `change`, `patch` or `delete` line of the same kind and
 * revision: a line is never skipped.
 */
export async function unpackGzipEvent(event: GzipEvent, line: string): Promise<PackedEvent> {
  let inner: string;
  try {
    inner = await gunzip(base64Bytes(event.value.data));
  } catch (err) {
    throw invalidLine('watch', line, 'gzip data that does not unpack', err);
  }
  const packed = parseWatchLine(inner);
  if (packed.type !== 'change' && packed.type !== 'patch' && packed.type !== 'delete') throw invalidLine('watch', line, `gzip of a ${packed.type} line`);
  if (packed.kind !== event.kind || packed.value.revision !== event.value.revision) throw invalidLine('watch', line, 'gzip of a line of another kind or revision');
  return packed;
}
