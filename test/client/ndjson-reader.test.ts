import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readLines } from '../../src/client/ndjson-reader.js';
import { ProtocolError } from '../../src/client/errors.js';

function streamOf(chunks: Uint8Array[], onCancel?: () => void): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[i++];
      if (next === undefined) c.close();
      else c.enqueue(next);
    },
    cancel() {
      onCancel?.();
    },
  });
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.slice(prev, p));
    prev = p;
  }
  return out;
}

async function collect(stream: ReadableStream<Uint8Array>, maxLineBytes?: number): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of readLines(stream, { maxLineBytes })) lines.push(line);
  return lines;
}

const enc = new TextEncoder();

describe('readLines', () => {
  it('yields the same lines however the bytes are split, multi-byte characters included', async () => {
    const line = fc.string({ unit: 'grapheme', maxLength: 30 }).filter((s) => !s.includes('\n') && !s.endsWith('\r'));
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { maxLength: 20 }), async (lines, cuts) => {
        const bytes = enc.encode(lines.map((l) => `${l}\n`).join(''));
        expect(await collect(streamOf(splitAt(bytes, cuts)))).toEqual(lines);
      }),
      { numRuns: 200 },
    );
  });

  it('yields a last line without terminator and strips CR of CRLF', async () => {
    expect(await collect(streamOf([enc.encode('a\r\nb\n'), enc.encode('c')]))).toEqual(['a', 'b', 'c']);
  });

  it('fails with line_too_long as soon as the buffered line passes the bound, newline or not', async () => {
    const chunk = enc.encode('x'.repeat(10));
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += 1;
        c.enqueue(chunk);
      },
    });
    const err = await collect(endless, 25).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe('line_too_long');
    expect(pulled).toBeLessThanOrEqual(4);
  });

  it('accepts a line of exactly the bound', async () => {
    expect(await collect(streamOf([enc.encode(`${'y'.repeat(25)}\n`)]), 25)).toEqual(['y'.repeat(25)]);
  });

  it('rejects invalid UTF-8 instead of replacing it', async () => {
    const err = await collect(streamOf([new Uint8Array([0x7b, 0xff, 0xfe, 0x0a])])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe('invalid_response');
    expect((err as ProtocolError).cause).toBeDefined();
  });

  it('cancels the source when the consumer stops early', async () => {
    let cancelled = false;
    const stream = streamOf([enc.encode('a\nb\nc\n'), enc.encode('d\n')], () => {
      cancelled = true;
    });
    for await (const line of readLines(stream)) {
      if (line === 'a') break;
    }
    expect(cancelled).toBe(true);
  });

  it('propagates a read error unchanged', async () => {
    const boom = new Error('socket hang up');
    let pulls = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (pulls++ === 0) c.enqueue(enc.encode('a\npartial'));
        else c.error(boom);
      },
    });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const line of readLines(stream)) seen.push(line);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['a']);
    expect(err).toBe(boom);
  });
});
