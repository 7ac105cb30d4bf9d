/**
 * The settings of `fleetplane sync`. Its own flags also come from
 * environment variables `FLEETPLANE_SYNC_*` (flags win); the connection
 * flags are ctl's, with ctl's environment and config file (FLEETPLANE_URL,
 * FLEETPLANE_TOKEN, a context).
 */
import { SYNC_DEFAULT_HOST, SYNC_DEFAULT_PORT } from '../protocol/wire.js';
import { parseCommandLine, type CommandLineGrammar } from '../util/command-line.js';
import { DURATION_EXAMPLES, parseDuration } from '../util/duration.js';
import { didYouMeanFlag } from '../util/nearest-name.js';

export type SyncLogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly SyncLogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Where the syncer's local API listens. */
export interface ListenAddress {
  host: string;
  /** 0: any free port (logged). */
  port: number;
}

/** The connection flags as given (resolved with ctl's rules: flags, then environment, then the context). */
export type ConnectionFlagName = 'server' | 'token' | 'context' | 'config' | 'ca-file' | 'org';

export interface SyncOptions {
  /** A file path, a `file:` URL, or an http(s) URL. */
  from: string;
  intervalMs: number;
  /** Longest wait for the source (an http(s) fetch) before the sync counts it failed. */
  timeoutMs: number;
  listen: ListenAddress;
  logLevel: SyncLogLevel;
  /** `--server`, `--token`, `--context`, `--config`, `--ca-file`, `--org` as given (undefined: not given). */
  connection: Partial<Record<ConnectionFlagName, string>>;
}

export const SYNC_DEFAULTS = { intervalMs: 60_000, timeoutMs: 10_000, logLevel: 'info' as SyncLogLevel };

/** A setting that can't be used; the message names it (exit 2). */
export class SyncOptionsError extends Error {
  override readonly name = 'SyncOptionsError';
}

interface Spec {
  /** Environment variable, for the syncer's own flags. */
  env?: string;
  help: string;
}

/** The table the parser, `sync --help` and shell completion are made from. */
export const SYNC_FLAGS = {
  org: { env: 'FLEETPLANE_SYNC_ORG', help: "Organization name or id whose policy document to keep in sync (default: the context's)." },
  from: { env: 'FLEETPLANE_SYNC_FROM', help: 'The document: a file path, or an http(s) URL fetched at each sync (required).' },
  interval: { env: 'FLEETPLANE_SYNC_INTERVAL', help: 'Time between syncs, e.g. 60, 30s, 5m (default 60s). Failed syncs of a reachable-again server or URL are retried sooner, with backoff.' },
  timeout: { env: 'FLEETPLANE_SYNC_TIMEOUT', help: 'Longest wait for an http(s) source, e.g. 10s (default 10s).' },
  listen: {
    env: 'FLEETPLANE_SYNC_LISTEN',
    help: `HOST:PORT of the local API: POST /sync (sync now) and GET /metrics (default ${SYNC_DEFAULT_HOST}:${SYNC_DEFAULT_PORT}; loopback, as POST /sync takes no credential; port 0: any).`,
  },
  'log-level': { env: 'FLEETPLANE_SYNC_LOG_LEVEL', help: 'Log level (default info); logs are JSON lines on stderr, pretty on a terminal.' },
  server: { help: "Server base URL (env FLEETPLANE_URL; default: the context's)." },
  token: { help: "Token that may write the organization's policy: admin, organization admin, or an owner's API key (env FLEETPLANE_TOKEN; default: the context's)." },
  context: { help: 'Use this context of the ctl config file instead of the current one.' },
  config: { help: 'The ctl config file (env FLEETPLANE_CONFIG; default as ctl).' },
  'ca-file': { help: "PEM certificates to trust for an https server (env FLEETPLANE_CA_FILE; default: the context's, else the system's)." },
} as const satisfies Record<string, Spec>;

type FlagName = keyof typeof SYNC_FLAGS;
const CONNECTION: readonly ConnectionFlagName[] = ['server', 'token', 'context', 'config', 'ca-file', 'org'];

const GRAMMAR: CommandLineGrammar = { flags: Object.fromEntries(Object.keys(SYNC_FLAGS).map((name) => [name, { takesValue: true }])) };

const isFlagName = (name: string): name is FlagName => Object.hasOwn(SYNC_FLAGS, name);

export function syncHelp(): string {
  const lines = Object.entries(SYNC_FLAGS).map(([flag, s]: [string, Spec]) => `  --${flag.padEnd(11)} ${s.env ? `[${s.env}] ` : ''}${s.help}`);
  return [
    'Usage: fleetplane sync --org ORG --from PATH|URL [--interval 60s] [--listen HOST:PORT] [connection flags]',
    '',
    "Keeps an organization's policy document equal to a file or a URL: at start, every --interval and on",
    "POST /sync, reads the source and the server's document, and applies the source when the two differ",
    "(If-Match: only over the document just read). A source that can't be read, doesn't validate or fails",
    'its tests is logged and counted (fleetplane_sync_errors_total); the server keeps its document.',
    '',
    `Options (flags win over environment variables):\n${lines.join('\n')}`,
    '',
    'Examples:',
    '  fleetplane sync --org acme --from /etc/fleetplane/policy.yaml',
    '  fleetplane sync --org acme --from https://git.example.com/raw/net/policy.yaml --interval 5m',
    `  curl -X POST http://${SYNC_DEFAULT_HOST}:${SYNC_DEFAULT_PORT}/sync    # sync now (e.g. from a CI job after a merge)`,
    '',
  ].join('\n');
}

function fromArgv(argv: readonly string[]): Partial<Record<FlagName, string>> {
  const raw: Partial<Record<FlagName, string>> = {};
  for (const word of parseCommandLine(argv, GRAMMAR)) {
    if (word.kind === 'positional') throw new SyncOptionsError(`unexpected argument ${JSON.stringify(word.value)}`);
    if (word.kind === 'end') throw new SyncOptionsError('unknown flag --');
    if (word.kind === 'unknown') {
      throw new SyncOptionsError(word.raw.startsWith('--') ? `unknown flag ${word.raw}${didYouMeanFlag(word.raw, Object.keys(SYNC_FLAGS))}` : `unexpected argument ${JSON.stringify(word.word)}`);
    }
    if (!isFlagName(word.name)) throw new SyncOptionsError(`unknown flag ${word.raw}`);
    if (word.value === undefined) throw new SyncOptionsError(`${word.raw} needs a value`);
    raw[word.name] = word.value;
  }
  return raw;
}

function duration(text: string | undefined, flag: string, fallbackMs: number): number {
  if (text === undefined) return fallbackMs;
  const n = parseDuration(text);
  if (n === undefined || n <= 0 || n > 86_400) throw new SyncOptionsError(`--${flag}: expected a duration above 0 and at most 1d (e.g. ${DURATION_EXAMPLES}), got ${JSON.stringify(text)}`);
  return Math.round(n * 1000);
}

/** `HOST:PORT`, `[v6]:PORT`, or `:PORT` (loopback). */
export function parseListen(text: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw new SyncOptionsError(`--listen: expected HOST:PORT (e.g. ${SYNC_DEFAULT_HOST}:${SYNC_DEFAULT_PORT}), got ${JSON.stringify(text)}`);
  return { host: m[1] ?? (m[2] || SYNC_DEFAULT_HOST), port };
}

/** The options of `argv` (the words after `fleetplane sync`) and `env`; SyncOptionsError names the first problem. */
export function parseSyncOptions(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): SyncOptions {
  const given = fromArgv(argv);
  const value = (name: FlagName): string | undefined => {
    const spec: Spec = SYNC_FLAGS[name];
    const fromEnv = spec.env === undefined ? undefined : env[spec.env];
    return given[name] ?? (fromEnv === '' ? undefined : fromEnv);
  };
  const from = value('from');
  if (from === undefined || from === '') throw new SyncOptionsError('--from is required: the policy document, a file path or an http(s) URL');
  const level = value('log-level') ?? SYNC_DEFAULTS.logLevel;
  const logLevel = LOG_LEVELS.find((l) => l === level);
  if (logLevel === undefined) throw new SyncOptionsError(`--log-level: expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  const listen = value('listen');
  return {
    from,
    intervalMs: duration(value('interval'), 'interval', SYNC_DEFAULTS.intervalMs),
    timeoutMs: duration(value('timeout'), 'timeout', SYNC_DEFAULTS.timeoutMs),
    listen: listen === undefined ? { host: SYNC_DEFAULT_HOST, port: SYNC_DEFAULT_PORT } : parseListen(listen),
    logLevel,
    connection: Object.fromEntries(CONNECTION.flatMap((name) => (value(name) === undefined ? [] : [[name, value(name)]]))),
  };
}
