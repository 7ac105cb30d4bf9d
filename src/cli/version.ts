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

/**
 * The commit the installed tree was checked out at, from the `.git` beside
 * its package.json (a clone, as the README's quick start makes): HEAD, or
 * the branch it names, loose or packed. Undefined without one (a package
 * installed from a registry), or when it can't be read.
 */
export function sourceCommit(): string | undefined {
  const git = new URL('../../.git/', import.meta.url);
  const read = (path: string): string | undefined => {
    try {
      return readFileSync(new URL(path, git), 'utf8');
    } catch {
      return undefined;
    }
  };
  const head = read('HEAD')?.trim();
  if (head === undefined) return undefined;
  const ref = /^ref: (refs\/[^\s]+)$/.exec(head)?.[1];
  if (ref === undefined) return /^[0-9a-f]{40}$/.test(head) ? head : undefined;
  const loose = read(ref)?.trim();
  if (loose !== undefined && /^[0-9a-f]{40}$/.test(loose)) return loose;
  const packed = read('packed-refs')
    ?.split('\n')
    .find((line) => line.endsWith(` ${ref}`));
  const hash = packed?.slice(0, 40);
  return hash !== undefined && /^[0-9a-f]{40}$/.test(hash) ? hash : undefined;
}

/** What `--version` prints: the package's version, and the commit when the tree is a clone. */
export function versionLine(): string {
  const commit = sourceCommit();
  return `fleetplane ${packageVersion()}${commit === undefined ? '' : ` (commit ${commit.slice(0, 12)})`}\n`;
}
