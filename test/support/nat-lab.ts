/**
 * The NAT lab of the tests: the lab itself is src/bench/netns/nat-lab.ts
 * (the relay benchmark builds the same one); this adds whether a suite
 * using it runs.
 */
import { NAT_LAB_TOOLS } from '../../src/bench/netns/nat-lab.js';
import { IN_CI, requireBinary, which } from './binaries.js';

export { createNatLab } from '../../src/bench/netns/nat-lab.js';
export type { LabNat, LabNode, NatKind, NatLab, NatLabOptions, NatSpec } from '../../src/bench/netns/nat-lab.js';

/**
 * Whether a suite using the lab runs: root, `ip`, `nft` and the suite's own
 * `tools`. In CI anything missing fails the suite; elsewhere it is skipped
 * with a loud message (test/support/binaries.ts).
 */
export function natLabAvailable(suite: string, tools: readonly string[] = [], packages = 'iproute2 nftables'): boolean {
  const all = [...NAT_LAB_TOOLS, ...tools];
  if (!requireBinary(`${all.join(', ')} (${packages})`, all.every((t) => which(t) !== undefined))) return false;
  if (process.getuid?.() === 0) return true;
  const msg = `\n*** ${suite} (network namespaces, NAT) needs root. ***\n`;
  if (IN_CI) throw new Error(msg);
  process.stderr.write(`${msg}*** Skipping it because this is not CI. ***\n`);
  return false;
}
