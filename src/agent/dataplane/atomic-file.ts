/**
 * Replacing a file's content atomically: readers see the old or the new
 * file, never a partial one.
 */
import { randomBytes } from 'node:crypto';
import { chmod, open, readFile, rename, rm, stat } from 'node:fs/promises';

async function readIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Writes `content` to `path` (temporary file in the same directory, fsync,
 * rename) unless the file already holds exactly that content; fixes the
 * mode if only that differs. Returns whether the content was written.
 */
export async function writeFileIfChanged(path: string, content: string, mode: number): Promise<boolean> {
  const current = await readIfExists(path);
  if (current === content) {
    if (((await stat(path)).mode & 0o777) !== mode) await chmod(path, mode);
    return false;
  }
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(tmp, 'wx', mode);
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    // The umask may have narrowed `mode` at creation.
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
  return true;
}
