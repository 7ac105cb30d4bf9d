/**
 * What the agent reports about itself: its version and the machine's OS.
 */
import { readFileSync } from 'node:fs';
import { arch, release, type } from 'node:os';

let cached: string | undefined;

/** The package version (from package.json two levels up, in src/ and in dist/ alike), or `unknown`. */
export function agentVersion(): string {
  if (cached !== undefined) return cached;
  try {
    const pkg: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const version = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? pkg.version : undefined;
    cached = typeof version === 'string' ? version : 'unknown';
  } catch {
    // A relocated build without package.json still runs; the report says so.
    cached = 'unknown';
  }
  return cached;
}

/** e.g. `Linux 6.1.0-18-amd64 x64`. */
export function osDescription(): string {
  return `${type()} ${release()} ${arch()}`;
}
