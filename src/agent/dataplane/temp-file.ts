/**
 * A short-lived private file for tools that read their input from a path
 * (`nft -f`, `wg set … private-key`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Writes `content` to a file only its owner can read (0600, in a fresh 0700
 * directory), runs `use(path)`, and removes it whatever happens.
 */
export async function withTempFile<T>(
  content: string,
  use: (path: string) => Promise<T>,
  parent: string = tmpdir(),
): Promise<T> {
  const dir = await mkdtemp(join(parent, 'fleetplane-'));
  try {
    const file = join(dir, 'input');
    await writeFile(file, content, { mode: 0o600 });
    return await use(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
