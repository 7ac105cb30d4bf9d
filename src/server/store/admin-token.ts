import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '../db/index.js';
import { SECRET_PREFIX } from '../../protocol/index.js';
import { hashSecret, newSecret } from './secrets.js';

export interface AdminToken {
  hash: string;
  /** The token itself when this process knows it (configured, read from the data dir, or just generated). */
  token: string | undefined;
  source: 'configured' | 'data-dir' | 'generated' | 'database' | 'memory';
}

const FILE = 'admin-token';
const SETTING = 'admin_token_hash';

/**
 * The bootstrap admin token: the configured one; else, on the embedded
 * storage, the one kept in the data directory (generated at first start,
 * mode 0600, shown at every start); else, in memory, a new one per start;
 * else, with --database-url, generated once with only its hash kept in the
 * database (shown once, at the start that generated it).
 */
export async function resolveAdminToken(
  db: Database,
  opts: { configured: string | undefined; dataDir: string | undefined },
): Promise<AdminToken> {
  if (opts.configured) return { hash: hashSecret(opts.configured), token: opts.configured, source: 'configured' };
  if (opts.dataDir === undefined && db.kind === 'pglite') {
    const token = newSecret(SECRET_PREFIX.admin);
    return { hash: hashSecret(token), token, source: 'memory' };
  }
  if (opts.dataDir !== undefined) {
    const file = join(opts.dataDir, FILE);
    if (existsSync(file)) {
      const token = readFileSync(file, 'utf8').trim();
      return { hash: hashSecret(token), token, source: 'data-dir' };
    }
    mkdirSync(opts.dataDir, { recursive: true });
    const token = newSecret(SECRET_PREFIX.admin);
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    return { hash: hashSecret(token), token, source: 'generated' };
  }
  const token = newSecret(SECRET_PREFIX.admin);
  const inserted = await db.query<{ value: string }>(
    'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value',
    [SETTING, hashSecret(token)],
  );
  if (inserted.length > 0) return { hash: hashSecret(token), token, source: 'generated' };
  const rows = await db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [SETTING]);
  return { hash: rows[0]?.value ?? '', token: undefined, source: 'database' };
}
