import type { Settings } from '../server/index.js';

/** Placeholder until the multi-process mode lands; refuses clearly instead of half-working. */
export async function runWorkers(_settings: Settings, _argv: readonly string[]): Promise<number> {
  process.stderr.write('fleetplane serve: --workers > 1 is not available in this build\n');
  return 2;
}
