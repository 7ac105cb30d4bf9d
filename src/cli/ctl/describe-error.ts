import { FleetplaneError } from '../../client/index.js';
import { certificateHint } from '../../util/untrusted-certificate.js';

/** Whitespace runs (newlines included) as one space: every message is one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** `; <what to do>` for an untrusted server certificate; empty otherwise. */
function ctlCertificateHint(err: unknown): string {
  const hint = certificateHint(err, "--ca-file (or FLEETPLANE_CA_FILE, or the context's ca-file)");
  return hint === undefined ? '' : `; ${hint}`;
}

/** An error on one line: the message, and for API errors the code and HTTP status, e.g. `device not found (not_found, HTTP 404)`. */
export function describeError(err: unknown): string {
  if (err instanceof FleetplaneError) {
    const status = err.status ? `, HTTP ${err.status}` : '';
    return oneLine(`${err.message} (${err.code}${status})${ctlCertificateHint(err)}`);
  }
  return oneLine(`${err instanceof Error ? err.message : String(err)}${ctlCertificateHint(err)}`);
}

/**
 * What a watch says on stderr about an outage: one line when it starts
 * (`reconnecting… (next try in 0.5s): <why>`), and one when it is over
 * (`reconnected after 12 attempts, 41.3s`, with the last attempt's reason
 * when it differs from the first's). The attempts in between are counted,
 * not printed: a three-minute outage is two lines, not ninety.
 */
export class OutageLines {
  #attempts = 0;
  #since = 0;
  #firstWhy = '';
  #lastWhy = '';

  constructor(
    private readonly write: (line: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** An attempt failed; the next comes in `delayMs`. */
  retrying(delayMs: number, error: unknown): void {
    this.#lastWhy = describeError(error);
    if (this.#attempts === 0) {
      this.#since = this.now();
      this.#firstWhy = this.#lastWhy;
      this.write(`reconnecting… (next try in ${(delayMs / 1000).toFixed(1)}s): ${this.#lastWhy}\n`);
    }
    this.#attempts++;
  }

  /** The stream is back (a no-op outside an outage). */
  back(): void {
    if (this.#attempts === 0) return;
    const n = this.#attempts;
    // A reason that changed on the way (a relist after compaction, say) is worth its line.
    const last = this.#lastWhy === this.#firstWhy ? '' : `; last: ${this.#lastWhy}`;
    this.write(`reconnected after ${n} ${n === 1 ? 'attempt' : 'attempts'}, ${((this.now() - this.#since) / 1000).toFixed(1)}s${last}\n`);
    this.#attempts = 0;
  }
}
