import { FleetplaneError } from '../../client/index.js';

/** Whitespace runs (newlines included) as one space: every message is one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Node's codes for a server certificate that doesn't lead to a trusted CA. */
const UNTRUSTED_CERTIFICATE = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
]);

/** What to do about an error whose cause (at any depth) is an untrusted server certificate; empty otherwise. */
function certificateHint(err: unknown): string {
  let at: unknown = err;
  for (let depth = 0; depth < 8 && at instanceof Error; depth++, at = at.cause) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && UNTRUSTED_CERTIFICATE.has(code)) {
      return "; the server's certificate is not signed by a CA trusted here: pass its CA with --ca-file (or FLEETPLANE_CA_FILE, or the context's ca-file)";
    }
  }
  return '';
}

/** An error on one line: the message, and for API errors the code and HTTP status, e.g. `device not found (not_found, HTTP 404)`. */
export function describeError(err: unknown): string {
  if (err instanceof FleetplaneError) {
    const status = err.status ? `, HTTP ${err.status}` : '';
    return oneLine(`${err.message} (${err.code}${status})${certificateHint(err)}`);
  }
  return oneLine(`${err instanceof Error ? err.message : String(err)}${certificateHint(err)}`);
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
