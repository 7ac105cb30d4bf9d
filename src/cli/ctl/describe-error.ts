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

/** The line a watch prints on stderr before it tries again. */
export function reconnectingLine(attempt: number, delayMs: number, error: unknown): string {
  return `reconnecting… (attempt ${attempt}, next try in ${(delayMs / 1000).toFixed(1)}s): ${describeError(error)}\n`;
}
