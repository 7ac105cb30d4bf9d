import { readFileSync } from 'node:fs';

/**
 * The version of the installed fleetplane package, read from its
 * package.json (two levels up from this file in src/cli and in dist/cli).
 */
export function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const version = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? pkg.version : undefined;
  return typeof version === 'string' ? version : 'unknown';
}

/** What `--version` prints. */
export function versionLine(): string {
  return `fleetplane ${packageVersion()}\n`;
}
