import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

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
 * the branch it names, loose or packed. A `.git` file (a worktree made by
 * `git worktree add`, or a submodule) names the directory that holds HEAD;
 * its branches are there or in the repository's common directory.
 * Undefined without one (a package installed from a registry), or when it
 * can't be read. `root` is the tree's directory (tests name another).
 */
export function sourceCommit(root: URL = new URL('../../', import.meta.url)): string | undefined {
  const read = (dir: URL, path: string): string | undefined => {
    try {
      return readFileSync(new URL(path, dir), 'utf8');
    } catch {
      return undefined;
    }
  };
  const gitFile = read(root, '.git');
  const linked = gitFile === undefined ? undefined : /^gitdir: (.+)$/m.exec(gitFile)?.[1]?.trim();
  const git = linked === undefined ? new URL('.git/', root) : asDirectory(linked, root);
  const common = linked === undefined ? git : asDirectory(read(git, 'commondir')?.trim() ?? '.', git);
  const head = read(git, 'HEAD')?.trim();
  if (head === undefined) return undefined;
  const ref = /^ref: (refs\/[^\s]+)$/.exec(head)?.[1];
  if (ref === undefined) return /^[0-9a-f]{40}$/.test(head) ? head : undefined;
  const loose = (read(git, ref) ?? read(common, ref))?.trim();
  if (loose !== undefined && /^[0-9a-f]{40}$/.test(loose)) return loose;
  const packed = read(common, 'packed-refs')
    ?.split('\n')
    .find((line) => line.endsWith(` ${ref}`));
  const hash = packed?.slice(0, 40);
  return hash !== undefined && /^[0-9a-f]{40}$/.test(hash) ? hash : undefined;
}

/** `path` (absolute, or relative to `base`) as a directory URL. */
function asDirectory(path: string, base: URL): URL {
  const dir = path.endsWith('/') ? path : `${path}/`;
  return dir.startsWith('/') ? pathToFileURL(dir) : new URL(dir, base);
}

/** What `--version` prints: the package's version, and the commit when the tree is a clone. */
export function versionLine(): string {
  const commit = sourceCommit();
  return `fleetplane ${packageVersion()}${commit === undefined ? '' : ` (commit ${commit.slice(0, 12)})`}\n`;
}
