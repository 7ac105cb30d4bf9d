/** One agent per state directory: the lock file, and how a stale one is taken over. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCK_FILE, StateDirLock, StateDirLockedError } from '../../src/agent/identity/state-lock.js';
import { tempDir } from './support/harness.js';

let dir: { path: string; remove: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('fp-lock-');
});
afterEach(async () => {
  await dir.remove();
});

async function bootId(): Promise<string | null> {
  return readFile('/proc/sys/kernel/random/boot_id', 'utf8').then((t) => t.trim(), () => null);
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  const pid = child.pid ?? 0;
  await once(child, 'exit');
  return pid;
}

describe('StateDirLock', () => {
  it('holds the directory until released: a second acquire fails naming the holder', async () => {
    const lock = await StateDirLock.acquire(dir.path);
    expect(JSON.parse(await readFile(join(dir.path, LOCK_FILE), 'utf8'))).toEqual({ pid: process.pid, boot_id: await bootId() });
    const err = await StateDirLock.acquire(dir.path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateDirLockedError);
    expect(err).toMatchObject({ pid: process.pid, message: expect.stringContaining(`another agent (pid ${process.pid})`) });
    await lock.release();
    const again = await StateDirLock.acquire(dir.path);
    await again.release();
  });

  it('refuses a lock held by another live process', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      await writeFile(join(dir.path, LOCK_FILE), JSON.stringify({ pid: other.pid, boot_id: await bootId() }));
      await expect(StateDirLock.acquire(dir.path)).rejects.toMatchObject({ name: 'StateDirLockedError', pid: other.pid });
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('takes over a stale lock: its process is gone, it is from before a reboot, or it is unreadable', async () => {
    const boot = await bootId();
    const stale = [
      JSON.stringify({ pid: await deadPid(), boot_id: boot }),
      '',
      'garbage',
      // This process is alive, but the lock names another boot: its pid meant another process then.
      ...(boot === null ? [] : [JSON.stringify({ pid: process.pid, boot_id: 'another-boot' })]),
    ];
    for (const content of stale) {
      await writeFile(join(dir.path, LOCK_FILE), content);
      const lock = await StateDirLock.acquire(dir.path);
      expect(JSON.parse(await readFile(join(dir.path, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
      await lock.release();
    }
  });

  it('release leaves a lock that is not its own', async () => {
    const lock = await StateDirLock.acquire(dir.path);
    const foreign = JSON.stringify({ pid: 1, boot_id: null });
    await writeFile(join(dir.path, LOCK_FILE), foreign);
    await lock.release();
    expect(await readFile(join(dir.path, LOCK_FILE), 'utf8')).toBe(foreign);
  });
});
