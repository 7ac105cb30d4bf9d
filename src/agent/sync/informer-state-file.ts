/**
 * The informers' state kept in the state directory between starts, so a
 * restarted agent resumes its watch instead of listing its organization
 * again. Written atomically, bounded in size; a file that can't be used is
 * ignored (logged), and the agent lists from 0 as it would without it.
 */
import { open, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { InformersState } from '../../client/index.js';
import { writeFileIfChanged } from '../dataplane/atomic-file.js';
import { decodeInformerState, encodeInformerState, type InformerStateOwner } from './informer-state-format.js';

export const INFORMER_STATE_FILE = 'informers.json';
/** Above this the state is not written (and any older file removed): the next start lists from 0. */
export const DEFAULT_INFORMER_STATE_MAX_BYTES = 64 * 1024 * 1024;

const FILE_MODE = 0o600;

export interface InformerStateFileOptions {
  /** The agent's state directory. */
  dir: string;
  owner: InformerStateOwner;
  logger: Logger;
  maxBytes?: number;
}

/** What `save` did: `unchanged` when the file already held exactly this state. */
export type SaveOutcome = 'written' | 'unchanged' | 'too_large';

function isMissing(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 'ENOENT';
}

/** Makes a rename in `dir` durable: the directory entry itself is synced. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export class InformerStateFile {
  readonly path: string;
  readonly maxBytes: number;
  readonly #o: InformerStateFileOptions;
  #overLimit = false;

  constructor(options: InformerStateFileOptions) {
    this.#o = options;
    this.path = join(options.dir, INFORMER_STATE_FILE);
    this.maxBytes = options.maxBytes ?? DEFAULT_INFORMER_STATE_MAX_BYTES;
  }

  /** The saved state, or undefined (missing, too large, unreadable, another owner, corrupt: logged). Never throws. */
  async load(): Promise<InformersState | undefined> {
    const log = this.#o.logger;
    const ignore = (reason: string, err?: unknown): undefined => {
      log.warn({ path: this.path, reason, ...(err === undefined ? {} : { err }) }, 'ignoring the saved informer state; listing the organization from the start');
      return undefined;
    };
    let text: string;
    try {
      const { size } = await stat(this.path);
      if (size > this.maxBytes) return ignore(`${size} bytes, above the limit of ${this.maxBytes}`);
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if (!isMissing(err)) return ignore('it could not be read', err);
      log.info({ path: this.path }, 'no saved informer state; listing the organization from the start');
      return undefined;
    }
    const decoded = decodeInformerState(text, this.#o.owner);
    if ('problem' in decoded) return ignore(decoded.problem);
    return decoded.state;
  }

  /**
   * Replaces the file with `state` (temporary file, fsync, rename, fsync of
   * the directory). Above `maxBytes` nothing is written and the file is
   * removed, with one warning until a state fits again. File-system errors
   * are thrown.
   */
  async save(state: InformersState, now: Date = new Date()): Promise<SaveOutcome> {
    const content = encodeInformerState(state, this.#o.owner, now);
    const bytes = Buffer.byteLength(content, 'utf8');
    if (bytes > this.maxBytes) {
      if (!this.#overLimit) {
        this.#o.logger.warn(
          { path: this.path, bytes, max_bytes: this.maxBytes },
          'the informer state is too large to save; not saving it, and the next start lists the organization from the start',
        );
      }
      this.#overLimit = true;
      await rm(this.path, { force: true });
      return 'too_large';
    }
    this.#overLimit = false;
    if (!(await writeFileIfChanged(this.path, content, FILE_MODE))) return 'unchanged';
    await syncDir(dirname(this.path));
    return 'written';
  }
}
