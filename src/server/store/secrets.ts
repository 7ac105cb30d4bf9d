import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new secret: a recognisable prefix and 32 random bytes. */
export function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** Only hashes are stored; the secrets have 256 bits of entropy, so a plain SHA-256 suffices. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}
