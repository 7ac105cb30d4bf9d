/** Entries a watch keeps: enough to see the last reconnect cycles of a stuck agent. */
const CAPACITY = 16;

/**
 * The last few transitions of one simulated agent's watch (connect, answer,
 * tails, error lines, end, close, scheduled retry), so that an agent still
 * not at its tails when a wait times out can say where it is stuck. Only
 * transitions are recorded, never ordinary lines: a join moves gigabytes and
 * this must cost nothing next to it.
 */
export class WatchTrace {
  private readonly at = new Float64Array(CAPACITY);
  private readonly what: string[] = [];
  private next = 0;
  private count = 0;

  add(at: number, what: string): void {
    this.at[this.next] = at;
    this.what[this.next] = what;
    this.next = (this.next + 1) % CAPACITY;
    this.count = Math.min(this.count + 1, CAPACITY);
  }

  /** Oldest first, each as "-<ms before now>ms <what>" so entries from another process's clock still read. */
  lines(now: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.count; i++) {
      const k = (this.next - this.count + i + CAPACITY) % CAPACITY;
      out.push(`-${Math.round(now - (this.at[k] ?? now))}ms ${this.what[k] ?? '?'}`);
    }
    return out;
  }
}
