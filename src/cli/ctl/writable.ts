/** Where ctl writes: anything with `write(string)` (process.stdout, a test buffer). */
export interface Writable {
  write(chunk: string): unknown;
}
