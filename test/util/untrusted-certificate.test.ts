/**
 * The one check for an untrusted server certificate, and the hints ctl and
 * the agent build on it: each names its own `--ca-file`.
 */
import { describe, expect, it } from 'vitest';
import { AgentFatalError, caFileHint } from '../../src/agent/index.js';
import { describeError } from '../../src/cli/ctl/describe-error.js';
import { TransportError } from '../../src/client/index.js';
import { certificateHint, isUntrustedCertificate } from '../../src/util/untrusted-certificate.js';

function tlsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** What fetch through the SDK throws when the TLS handshake fails with `code`. */
function viaSdk(code: string, message: string): TransportError {
  return new TransportError({ code: 'network_error', message: 'GET /api/registration_key: fetch failed', cause: new TypeError('fetch failed', { cause: tlsError(code, message) }) });
}

describe('an untrusted server certificate', () => {
  it.each([
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'unable to get local issuer certificate'],
  ])('is told by its code %s, on the error or along its causes', (code, message) => {
    expect(isUntrustedCertificate(tlsError(code, message))).toBe(true);
    expect(isUntrustedCertificate(viaSdk(code, message))).toBe(true);
  });

  it('is not any other failure', () => {
    expect(isUntrustedCertificate(tlsError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:443'))).toBe(false);
    expect(isUntrustedCertificate(tlsError('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"))).toBe(false);
    expect(isUntrustedCertificate('UNABLE_TO_VERIFY_LEAF_SIGNATURE')).toBe(false);
    expect(certificateHint(new Error('x'), '--ca-file')).toBeUndefined();
  });

  it('ctl says to pass its --ca-file, FLEETPLANE_CA_FILE or the context', () => {
    expect(describeError(viaSdk('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'))).toBe(
      "GET /api/registration_key: fetch failed (network_error); the server's certificate is not signed by a CA trusted here: pass its CA with --ca-file (or FLEETPLANE_CA_FILE, or the context's ca-file)",
    );
    expect(describeError(tlsError('ECONNREFUSED', 'connect ECONNREFUSED'))).toBe('connect ECONNREFUSED');
  });

  it("the agent says to pass its --ca-file or FLEETPLANE_AGENT_CA_FILE, also for a fatal error it causes", () => {
    const hint = "the server's certificate is not signed by a CA trusted here: pass its CA with --ca-file (or FLEETPLANE_AGENT_CA_FILE)";
    expect(caFileHint(viaSdk('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'))).toBe(hint);
    const fatal = new AgentFatalError('enrollment_refused', 'the login did not succeed', { cause: viaSdk('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain') });
    expect(caFileHint(fatal)).toBe(hint);
    expect(caFileHint(new AgentFatalError('config', 'no registration key'))).toBeUndefined();
  });
});
