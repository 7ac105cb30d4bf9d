/**
 * The routes a device requests (`advertise_cidrs`), as the agent compares
 * them with what the server holds.
 */
import { cidrNetwork } from '../../protocol/index.js';

/**
 * Whether two route lists request the same prefixes: in any order, repeats
 * and spelling aside (`FD00:20::/48` is `fd00:20::/48`). Text that is not a
 * CIDR is compared as written.
 */
export function sameRoutes(a: readonly string[], b: readonly string[]): boolean {
  const set = (list: readonly string[]): string => [...new Set(list.map((c) => cidrNetwork(c) ?? c))].sort().join(' ');
  return set(a) === set(b);
}
