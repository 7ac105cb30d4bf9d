/**
 * One asynchronous value read at most once per `ttlMs` however often it is
 * asked for: callers within the lifetime of the last read get its value, and
 * callers while a read is in flight share it. A failed read is not kept: the
 * next call reads again.
 */
export class CachedRead<T> {
  #value: { readonly at: number; readonly value: T } | undefined;
  #inflight: Promise<T> | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get(): Promise<T> {
    if (this.#value && this.now() - this.#value.at < this.ttlMs) return Promise.resolve(this.#value.value);
    this.#inflight ??= this.read().then(
      (value) => {
        this.#value = { at: this.now(), value };
        this.#inflight = undefined;
        return value;
      },
      (err: unknown) => {
        this.#inflight = undefined;
        throw err;
      },
    );
    return this.#inflight;
  }
}
