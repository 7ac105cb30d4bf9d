/**
 * One agent per state directory. Two agents on one directory would enroll
 * two devices with one key pair, or fight over the dataplane; the second
 * must stop before it talks to the server. `agent.lock` in the directory
 * holds the owner's pid and the machine's boot id while it runs.
 */
import { randomBytes } from 'node:crypto';
import { link, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCK_FILE = 'agent.lock';

const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

/** Another live agent holds the directory. */
export class StateDirLockedError extends Error {
  override readonly name = 'StateDirLockedError';
  constructor(
    readonly path: string,
    readonly pid: number,
  ) {
    super(`another agent (pid ${pid}) is using this state directory (${path}); stop it first, or use another --state-dir`);
  }
}

interface LockContent {
  pid: number;
  /** Linux's boot id: a lock from before a reboot is stale whatever process has its pid now. */
  boot_id: string | null;
}

async function bootId(): Promise<string | null> {
  try {
    return (await readFile(BOOT_ID_FILE, 'utf8')).trim() || null;
  } catch {
    return null;
  }
}

function parse(text: string): LockContent | undefined {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null) return undefined;
    const r = v as Record<string, unknown>;
    if (typeof r['pid'] !== 'number' || !Number.isInteger(r['pid']) || r['pid'] <= 0) return undefined;
    return { pid: r['pid'], boot_id: typeof r['boot_id'] === 'string' ? r['boot_id'] : null };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isCode(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

/**
 * The lock of a state directory (which must exist). `acquire` throws
 * StateDirLockedError when a live agent holds it; a lock whose process is
 * gone (or from before a reboot, or unreadable) is taken over. The file
 * appears whole (written aside, then hard-linked into place), so a reader
 * never sees it half written.
 */
export class StateDirLock {
  private constructor(
    readonly path: string,
    private readonly content: string,
  ) {}

  static async acquire(dir: string): Promise<StateDirLock> {
    const path = join(dir, LOCK_FILE);
    const boot = await bootId();
    const content = `${JSON.stringify({ pid: process.pid, boot_id: boot } satisfies LockContent)}\n`;
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, content, { mode: 0o600 });
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await link(tmp, path);
          return new StateDirLock(path, content);
        } catch (err) {
          if (!isCode(err, 'EEXIST') || attempt >= 3) throw err;
        }
        let text: string;
        try {
          text = await readFile(path, 'utf8');
        } catch (err) {
          if (isCode(err, 'ENOENT')) continue;
          throw err;
        }
        const held = parse(text);
        const sameBoot = held !== undefined && (held.boot_id === null || boot === null || held.boot_id === boot);
        if (held && sameBoot && alive(held.pid)) throw new StateDirLockedError(dir, held.pid);
        // Stale. Moved aside, then checked: if another agent replaced it meanwhile, its lock goes back.
        const aside = `${path}.${randomBytes(6).toString('hex')}.stale`;
        try {
          await rename(path, aside);
        } catch (err) {
          if (isCode(err, 'ENOENT')) continue;
          throw err;
        }
        if ((await readFile(aside, 'utf8')) !== text) await link(aside, path).catch(() => undefined);
        await rm(aside, { force: true });
      }
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Removes the lock if it is still this one's. */
  async release(): Promise<void> {
    try {
      if ((await readFile(this.path, 'utf8')) !== this.content) return;
      await rm(this.path, { force: true });
    } catch (err) {
      if (!isCode(err, 'ENOENT')) throw err;
    }
  }
}
