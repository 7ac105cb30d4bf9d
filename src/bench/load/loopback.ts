/**
 * Loopback source addresses for client sockets: 127.0.0.1, 127.0.0.2, …
 * (NOTES.md: each source/destination pair has only ~28,000 ephemeral ports).
 * Addresses are handed out round-robin over a large range, so consecutive
 * runs also use different source addresses.
 */
const RANGE = 250 * 250;
let next = 0;

export const SOCKETS_PER_ADDRESS = 1000;

export function allocateAddresses(sockets: number, perAddress = SOCKETS_PER_ADDRESS): string[] {
  const count = Math.max(1, Math.ceil(sockets / perAddress));
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = next++ % RANGE;
    out.push(`127.0.${Math.floor(n / 250)}.${(n % 250) + 1}`);
  }
  return out;
}
