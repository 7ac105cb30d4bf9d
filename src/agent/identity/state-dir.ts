/**
 * What the agent keeps between starts, in its state directory: the WireGuard
 * private key and the device identity (id, organization, token). Both are
 * secrets: files are 0600 in a 0700 directory, written atomically. (The
 * watch's last state, `informers.json`, lives there too: informer-state-file.ts.)
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeyPair, isWireGuardKey, publicKeyFromPrivate, type WireGuardKeyPair } from '../dataplane/index.js';

export const PRIVATE_KEY_FILE = 'private.key';
export const IDENTITY_FILE = 'device.json';

const DIR_MODE = 0o700;
const SECRET_MODE = 0o600;

/** What enrollment produced. The token is the device's only credential. */
export interface DeviceIdentity {
  device_id: string;
  organization_id: string;
  /** The organization's name when the device enrolled, if the server said (what a later `--org NAME` is checked against first). */
  organization_name?: string;
  device_token: string;
  /** The public key the device enrolled with: must match the private key file. */
  public_key: string;
  /** The server it enrolled with (later starts may override it). */
  server: string;
  enrolled_at: string;
  /**
   * When `device_token` expires (server's clock; null: never). Absent in
   * state written before protocol v1.5: the agent then never renews.
   */
  device_token_expires_at?: string | null;
  /** When `device_token` was issued (at enrollment or its last renewal), server's clock. */
  device_token_issued_at?: string;
}

/** The state directory can't be used as it is (unreadable, corrupt, mismatched files). */
export class StateDirError extends Error {
  override readonly name = 'StateDirError';
}

function isIdentity(v: unknown): v is DeviceIdentity {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  const expires = r['device_token_expires_at'];
  const issued = r['device_token_issued_at'];
  const orgName = r['organization_name'];
  return (
    (orgName === undefined || typeof orgName === 'string') &&
    ['device_id', 'organization_id', 'device_token', 'public_key', 'server', 'enrolled_at'].every((k) => typeof r[k] === 'string') &&
    (expires === undefined || expires === null || typeof expires === 'string') &&
    (issued === undefined || typeof issued === 'string')
  );
}

function isMissing(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 'ENOENT';
}

/** Writes `text` to `path` (mode 0600) through a temporary file and a rename, synced to disk. */
async function writeSecret(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fh = await open(tmp, 'wx', SECRET_MODE);
    try {
      await fh.writeFile(text, 'utf8');
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * The agent's state directory. Methods throw StateDirError for unusable
 * content and let file-system errors through.
 */
export class StateDir {
  constructor(readonly path: string) {}

  get privateKeyPath(): string {
    return join(this.path, PRIVATE_KEY_FILE);
  }

  get identityPath(): string {
    return join(this.path, IDENTITY_FILE);
  }

  /** Creates the directory (0700) if missing. */
  async ensure(): Promise<void> {
    await mkdir(this.path, { recursive: true, mode: DIR_MODE });
  }

  /**
   * The key pair: read from `private.key`, or generated and written there
   * (0600) on first use. `created` says which. A key file readable by others
   * is narrowed to 0600 (`narrowed: true`).
   */
  async loadOrCreateKeyPair(): Promise<{ keys: WireGuardKeyPair; created: boolean; narrowed: boolean }> {
    let text: string | undefined;
    try {
      text = await readFile(this.privateKeyPath, 'utf8');
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
    if (text === undefined) {
      const keys = generateKeyPair();
      await writeSecret(this.privateKeyPath, `${keys.privateKey}\n`);
      return { keys, created: true, narrowed: false };
    }
    const privateKey = text.trim();
    if (!isWireGuardKey(privateKey)) throw new StateDirError(`${this.privateKeyPath} does not hold a WireGuard private key`);
    let narrowed = false;
    const mode = (await stat(this.privateKeyPath)).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      await chmod(this.privateKeyPath, SECRET_MODE);
      narrowed = true;
    }
    return { keys: { privateKey, publicKey: publicKeyFromPrivate(privateKey) }, created: false, narrowed };
  }

  /** The identity of an enrolled device, or undefined before the first enrollment. */
  async loadIdentity(): Promise<DeviceIdentity | undefined> {
    let text: string;
    try {
      text = await readFile(this.identityPath, 'utf8');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new StateDirError(`${this.identityPath} is not JSON`);
    }
    if (!isIdentity(parsed)) throw new StateDirError(`${this.identityPath} is not a device identity`);
    return parsed;
  }

  /** Replaces the identity atomically (a temporary file renamed over it, synced): a crash leaves the old or the new one, whole. */
  async saveIdentity(identity: DeviceIdentity): Promise<void> {
    await writeSecret(this.identityPath, `${JSON.stringify(identity, null, 2)}\n`);
  }
}
