import { isIP } from 'node:net';

/**
 * True when `host` (a listen address or name) is reachable only from this
 * machine: `localhost`, 127.0.0.0/8, `::1` (also as `::ffff:127.x.y.z`).
 * Wildcards (`0.0.0.0`, `::`) and every other address are not.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^::ffff:127\./.test(h) || /^0{0,4}(:0{0,4}){6}:0{0,3}1$/.test(h);
  return false;
}
