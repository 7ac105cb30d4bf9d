/**
 * scripts/build-if-stale.mjs (what `npm start` runs before the server):
 * compiles only when a source, a source directory or tsconfig.json changed
 * since the last successful compile. Checked on a small project in a temporary
 * directory; whether it compiled shows in its output file, overwritten
 * between runs with a marker that only a compile replaces.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const MARKER = '// not compiled again\n';

describe('build-if-stale', () => {
  let dir: string;
  const file = (...p: string[]) => join(dir, ...p);
  const out = () => readFile(file('dist', 'cli', 'main.js'), 'utf8');
  const mark = () => writeFile(file('dist', 'cli', 'main.js'), MARKER);
  const run = async (...args: string[]): Promise<number> => {
    try {
      await promisify(execFile)(process.execPath, [file('scripts', 'build-if-stale.mjs'), ...args], { cwd: dir });
      return 0;
    } catch (err) {
      return (err as { code?: number }).code ?? -1;
    }
  };
  /** Gives `path` a modification time just after the last compile started (no sleeping, no clock). */
  const touchAfterStamp = async (path: string) => {
    const built = (await stat(file('dist', '.build-stamp'))).mtimeMs;
    // A few ms later: utimes rounds times, and the stamp's may read back as x.999.
    const t = new Date(built + 5);
    await utimes(path, t, t);
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fp-build-'));
    await mkdir(file('scripts'));
    await mkdir(file('src', 'cli'), { recursive: true });
    await copyFile(join(ROOT, 'scripts', 'build-if-stale.mjs'), file('scripts', 'build-if-stale.mjs'));
    await symlink(join(ROOT, 'node_modules'), file('node_modules'));
    // The library's own declarations need no checking here, and the smallest standard library (ES5, not the
    // target's default with the DOM) does: each of the eight compiles this test makes then costs half the CPU.
    await writeFile(
      file('tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', lib: ['ES5'], module: 'NodeNext', outDir: 'dist', rootDir: 'src', strict: true, types: [], skipLibCheck: true },
        include: ['src/**/*.ts'],
      }),
    );
    await writeFile(file('src', 'cli', 'main.ts'), 'export const answer: number = 42;\n');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('compiles when there is no build, then not again until something changes', async () => {
    expect(await run()).toBe(0);
    expect(await out()).toContain('answer = 42');
    await mark();
    expect(await run()).toBe(0);
    expect(await out()).toBe(MARKER);
  }, 60_000);

  it('compiles again after a source, tsconfig.json, or the set of files (added, removed) changed', async () => {
    await touchAfterStamp(file('src', 'cli', 'main.ts'));
    expect(await run()).toBe(0);
    expect(await out()).not.toBe(MARKER);

    await mark();
    await touchAfterStamp(file('tsconfig.json'));
    expect(await run()).toBe(0);
    expect(await out()).not.toBe(MARKER);

    // A new file whose own time is old: its directory's time says it arrived.
    await mark();
    await writeFile(file('src', 'cli', 'extra.ts'), 'export const extra = 1;\n');
    await utimes(file('src', 'cli', 'extra.ts'), new Date(0), new Date(0));
    await touchAfterStamp(file('src', 'cli'));
    expect(await run()).toBe(0);
    expect(await out()).not.toBe(MARKER);
    expect(await readFile(file('dist', 'cli', 'extra.js'), 'utf8')).toContain('extra = 1');

    await mark();
    await unlink(file('src', 'cli', 'extra.ts'));
    await touchAfterStamp(file('src', 'cli'));
    expect(await run()).toBe(0);
    expect(await out()).not.toBe(MARKER);

    await mark();
    expect(await run()).toBe(0);
    expect(await out()).toBe(MARKER);
  }, 120_000);

  it('--force always compiles; a failed compile leaves no stamp, so the next start compiles again', async () => {
    await mark();
    expect(await run('--force')).toBe(0);
    expect(await out()).not.toBe(MARKER);

    await writeFile(file('src', 'cli', 'main.ts'), 'export const answer: number = "not a number";\n');
    await touchAfterStamp(file('src', 'cli', 'main.ts'));
    expect(await run()).not.toBe(0);
    await writeFile(file('src', 'cli', 'main.ts'), 'export const answer: number = 43;\n');
    await utimes(file('src', 'cli', 'main.ts'), new Date(0), new Date(0));
    await mark();
    expect(await run()).toBe(0);
    expect(await out()).toContain('answer = 43');
  }, 120_000);
});
