import { timingSafeEqual } from 'node:crypto';

/** String equality in time independent of where they differ (for state and nonce values). */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
