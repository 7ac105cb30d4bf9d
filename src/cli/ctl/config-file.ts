import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';

/**
 * One context of the config file: where a server is and how to talk to it,
 * like a kubeconfig context. Fields other than these are kept as they are
 * (a later version may add some).
 */
export interface ContextEntry {
  server: string;
  token?: string;
  /** Organization name or id used when `--org` is not given. */
  org?: string;
  /** Absolute path of PEM certificates to trust for https. */
  'ca-file'?: string;
  [other: string]: unknown;
}

/**
 * `config.json`: `{"current-context": NAME, "contexts": {NAME: ContextEntry}}`.
 * Written with mode 0600 (it holds tokens), atomically (temporary file, then rename).
 */
export interface ConfigFile {
  'current-context'?: string;
  contexts: Record<string, ContextEntry>;
  [other: string]: unknown;
}

/** The config file is unreadable or malformed: exit 1, naming the file. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

/** `--config`, else FLEETPLANE_CONFIG, else `$XDG_CONFIG_HOME/fleetplane/config.json` (XDG: only an absolute path counts), else `~/.config/...`. */
export function configPath(flag: string | undefined, env: Env): string {
  if (flag !== undefined && flag !== '') return flag;
  const fromEnv = env['FLEETPLANE_CONFIG'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const xdg = env['XDG_CONFIG_HOME'];
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(env['HOME'] || homedir(), '.config');
  return join(base, 'fleetplane', 'config.json');
}

export interface LoadedConfig {
  path: string;
  config: ConfigFile;
  /** Permission bits of the file, when it exists. */
  mode: number | undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const STRING_FIELDS = ['server', 'token', 'org', 'ca-file'] as const;

function checkContext(path: string, name: string, v: unknown): ContextEntry {
  if (!isRecord(v)) throw new ConfigError(`${path}: context "${name}" is not an object`);
  for (const field of STRING_FIELDS) {
    if (v[field] !== undefined && typeof v[field] !== 'string') throw new ConfigError(`${path}: context "${name}": ${field} must be a string`);
  }
  if (typeof v['server'] !== 'string') throw new ConfigError(`${path}: context "${name}" has no server`);
  return { ...v, server: v['server'] };
}

/** The config file at `path`; an empty config when the file doesn't exist. */
export async function loadConfig(path: string): Promise<LoadedConfig> {
  let text: string;
  let mode: number;
  try {
    [text, mode] = await Promise.all([readFile(path, 'utf8'), stat(path).then((s) => s.mode & 0o777)]);
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return { path, config: { contexts: {} }, mode: undefined };
    throw new ConfigError(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${path} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isRecord(parsed)) throw new ConfigError(`${path}: expected a JSON object`);
  const rawContexts = parsed['contexts'] ?? {};
  if (!isRecord(rawContexts)) throw new ConfigError(`${path}: "contexts" must be an object`);
  const current = parsed['current-context'];
  if (current !== undefined && typeof current !== 'string') throw new ConfigError(`${path}: "current-context" must be a string`);
  const contexts: Record<string, ContextEntry> = {};
  for (const [name, v] of Object.entries(rawContexts)) contexts[name] = checkContext(path, name, v);
  const config: ConfigFile = { ...parsed, contexts };
  if (current === undefined) delete config['current-context'];
  else config['current-context'] = current;
  return { path, config, mode };
}

/** Writes the config with mode 0600 in a directory created 0700, replacing the file atomically. */
export async function saveConfig(path: string, config: ConfigFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // The mode given to writeFile is masked by the umask; the file holds tokens, so set it exactly.
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

/** A config file others can read leaks its tokens. */
export function looseModeWarning(loaded: LoadedConfig): string | undefined {
  if (loaded.mode === undefined || (loaded.mode & 0o077) === 0) return undefined;
  return `warning: ${loaded.path} is readable by others (mode ${loaded.mode.toString(8).padStart(4, '0')}); run: chmod 600 ${loaded.path}`;
}
