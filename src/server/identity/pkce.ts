import { createHash, randomBytes } from 'node:crypto';

/** 32 random bytes, base64url: a `state`, a `nonce`, or a PKCE `code_verifier` (43 characters, RFC 7636 §4.1). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The S256 `code_challenge` of a verifier (RFC 7636 §4.2). */
export function s256Challenge(codeVerifier: string): string {
  return createHash('sha256').update(codeVerifier, 'ascii').digest('base64url');
}
