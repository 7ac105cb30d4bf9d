import { StringDecoder } from 'node:string_decoder';

/**
 * Splits a byte stream into `\n`-terminated lines. Bytes after the last
 * newline are kept until more arrive; `rest` says what is left when the
 * stream ends (a complete stream leaves nothing).
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  /** Feeds bytes; returns the lines they completed, without their newline. */
  push(chunk: Buffer | string): string[] {
    const text = this.partial + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    return lines;
  }

  /** Text after the last newline (a truncated line), once the stream ended. */
  get rest(): string {
    return this.partial + this.decoder.end();
  }
}
