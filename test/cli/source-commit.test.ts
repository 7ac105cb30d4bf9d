/**
 * `--version`'s commit, read from the files git leaves: a clone's `.git`
 * directory, and a worktree's `.git` file naming its own directory, whose
 * branches live in the repository's common directory.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { sourceCommit } from '../../src/cli/version.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const dirs: string[] = [];

async function tree(files: Record<string, string>): Promise<URL> {
  const root = await mkdtemp(join(tmpdir(), 'fp-commit-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    const full = join(root, path);
    await mkdir(join(full, '..'), { recursive: true });
    await writeFile(full, text);
  }
  return pathToFileURL(`${root}/`);
}

afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('sourceCommit', () => {
  it('reads a clone: a loose branch, a packed one, a detached HEAD', async () => {
    expect(sourceCommit(await tree({ 'app/.git/HEAD': 'ref: refs/heads/main\n', 'app/.git/refs/heads/main': `${A}\n` }).then((u) => new URL('app/', u)))).toBe(A);
    expect(sourceCommit(await tree({ '.git/HEAD': 'ref: refs/heads/main\n', '.git/packed-refs': `# pack-refs\n${B} refs/heads/main\n` }))).toBe(B);
    expect(sourceCommit(await tree({ '.git/HEAD': `${A}\n` }))).toBe(A);
  });

  it('reads a worktree: HEAD in its own directory, the branch in the common one (loose or packed), by relative or absolute path', async () => {
    const relative = await tree({
      'repo/.git/refs/heads/feature': `${B}\n`,
      'repo/.git/worktrees/wt/HEAD': 'ref: refs/heads/feature\n',
      'repo/.git/worktrees/wt/commondir': '../..\n',
      'wt/.git': 'gitdir: ../repo/.git/worktrees/wt\n',
    });
    expect(sourceCommit(new URL('wt/', relative))).toBe(B);
    const root = await tree({
      'repo/.git/packed-refs': `${A} refs/heads/main\n`,
      'repo/.git/worktrees/wt/HEAD': 'ref: refs/heads/main\n',
      'repo/.git/worktrees/wt/commondir': '../..\n',
    });
    const gitdir = new URL('repo/.git/worktrees/wt', root).pathname;
    await mkdir(new URL('wt/', root), { recursive: true });
    await writeFile(new URL('wt/.git', root), `gitdir: ${gitdir}\n`);
    expect(sourceCommit(new URL('wt/', root))).toBe(A);
  });

  it('is undefined without git, or with a HEAD naming nothing', async () => {
    expect(sourceCommit(await tree({ 'package.json': '{}' }))).toBeUndefined();
    expect(sourceCommit(await tree({ '.git/HEAD': 'ref: refs/heads/gone\n' }))).toBeUndefined();
  });
});
