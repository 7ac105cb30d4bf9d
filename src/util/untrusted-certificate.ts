/**
 * A server certificate that doesn't lead to a CA trusted here, and what to
 * tell the person who can fix it: `fleetplane ctl` and `fleetplane agent`
 * both point to their `--ca-file`.
 */

/** Node's codes for a server certificate that doesn't lead to a trusted CA. */
const UNTRUSTED_CERTIFICATE = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
]);

/** True when `err`, or an error along its `cause` (8 deep at most), is Node's refusal of an untrusted server certificate. */
export function isUntrustedCertificate(err: unknown): boolean {
  let at: unknown = err;
  for (let depth = 0; depth < 8 && at instanceof Error; depth++, at = at.cause) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && UNTRUSTED_CERTIFICATE.has(code)) return true;
  }
  return false;
}

/**
 * For an untrusted server certificate (see isUntrustedCertificate): what to
 * do, e.g. `the server's certificate is not signed by a CA trusted here:
 * pass its CA with --ca-file`, where `howToTrust` names the setting
 * (`--ca-file (or FLEETPLANE_CA_FILE)`). Undefined for any other error.
 */
export function certificateHint(err: unknown, howToTrust: string): string | undefined {
  return isUntrustedCertificate(err) ? `the server's certificate is not signed by a CA trusted here: pass its CA with ${howToTrust}` : undefined;
}
