import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { packageVersion } from '../../src/cli/version.js';

/**
 * What `--version` should print here, worked out apart from the code under
 * test: the commit as git itself names it, when this tree is a clone.
 */
export function expectedVersionLine(): string {
  let commit: string | undefined;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    commit = undefined;
  }
  return `fleetplane ${packageVersion()}${commit ? ` (commit ${commit.slice(0, 12)})` : ''}\n`;
}
