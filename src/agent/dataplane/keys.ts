/**
 * WireGuard keys: X25519, raw 32 bytes, standard base64 (what `wg genkey`
 * and `wg pubkey` print).
 */
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';

export interface WireGuardKeyPair {
  privateKey: string;
  publicKey: string;
}

const KEY_BYTES = 32;
// DER prefix of a PKCS#8 X25519 private key (RFC 8410); the raw key follows.
const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const KEY_PATTERN = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

export class InvalidKeyError extends Error {
  override name = 'InvalidKeyError';
  constructor() {
    super('not a WireGuard key (32 bytes, base64)');
  }
}

/** True for a canonical base64 encoding of exactly 32 bytes. */
export function isWireGuardKey(text: string): boolean {
  return KEY_PATTERN.test(text);
}

function decodeKey(text: string): Buffer {
  if (!isWireGuardKey(text)) throw new InvalidKeyError();
  return Buffer.from(text, 'base64');
}

/** Clamps like `wg genkey` does (RFC 7748 §5), so the stored key is the one X25519 uses. */
function clamp(raw: Buffer): Buffer {
  const out = Buffer.from(raw);
  out[0] = (out[0] ?? 0) & 248;
  out[31] = ((out[31] ?? 0) & 127) | 64;
  return out;
}

/** A new key pair from the system's CSPRNG; the private key is clamped. */
export function generateKeyPair(): WireGuardKeyPair {
  const privateKey = clamp(randomBytes(KEY_BYTES)).toString('base64');
  return { privateKey, publicKey: publicKeyFromPrivate(privateKey) };
}

/** The public key of `privateKey` (base64 in, base64 out). Throws InvalidKeyError. */
export function publicKeyFromPrivate(privateKey: string): string {
  const der = Buffer.concat([PKCS8_X25519_PREFIX, decodeKey(privateKey)]);
  const jwk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new InvalidKeyError();
  return Buffer.from(jwk.x, 'base64url').toString('base64');
}

/** True when both private keys act as the same X25519 scalar (clamping ignored). */
export function samePrivateKey(a: string, b: string): boolean {
  if (!isWireGuardKey(a) || !isWireGuardKey(b)) return false;
  return clamp(decodeKey(a)).equals(clamp(decodeKey(b)));
}
