/**
 * The settings of `fleetplane agent`: each a flag and an environment
 * variable `FLEETPLANE_AGENT_*`. Flags win over the environment, which wins
 * over the default.
 */
import { hostname as osHostname } from 'node:os';
import { AGENT_LOCAL_ADDRESS_FILE, AGENT_LOCAL_DEFAULT_PORT, AGENT_LOCAL_HOST, isEndpointAddress, routePrefix, STUN_DEFAULT_ALT_PORT, STUN_DEFAULT_PORT } from '../protocol/wire.js';
import { parseCommandLine, type CommandLineGrammar } from '../util/command-line.js';
import { DURATION_EXAMPLES, parseDuration } from '../util/duration.js';
import { didYouMeanFlag } from '../util/nearest-name.js';
import { DEFAULT_LISTEN_PORT, isInterfaceName } from './dataplane/desired-state.js';
import type { DataplaneMode } from './dataplane/index.js';

export type AgentLogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface AgentOptions {
  /** Server base URL. May be omitted on later starts: the state dir remembers it. */
  server: string | undefined;
  /** Organization id. Optional: enrollment asks the server for the registration key's; later starts check it against the state dir. */
  org: string | undefined;
  /** Needed only for the first start (enrollment). */
  registrationKey: string | undefined;
  /**
   * First start without a registration key: sign in as a user (device
   * login; the URL and code are printed on stderr) and enroll as that user
   * (set only when asked).
   */
  login?: true;
  /** Keys, identity, rendered files. Created 0700. */
  stateDir: string;
  /** PEM file of the certificates to trust for an https server (a private CA); undefined: the system's. */
  caFile: string | undefined;
  dataplane: DataplaneMode;
  interfaceName: string;
  /** The hostname the device enrolls with. */
  hostname: string;
  listenPort: number;
  /** `ADDR:PORT` values published as `manual` endpoints; empty: interface addresses with the listen port. */
  endpoints: string[];
  /**
   * The routes this device requests (`advertise_cidrs`): canonical CIDRs,
   * without repeats, in the order given. The agent owns the request: it is
   * sent at enrollment and set again at every start (empty clears it).
   */
  advertiseRoutes: string[];
  /**
   * Loopback port of the local API; 0 (the default) picks a free one. Either
   * way the port is written to AGENT_LOCAL_ADDRESS_FILE in the state directory.
   */
  localPort: number;
  /** Discover the WireGuard port's public mapping with STUN and publish it (linux dataplane only). */
  stun: boolean;
  /** STUN server host (IPv4 address or name); undefined: the host of the server URL. */
  stunServer: string | undefined;
  /** The STUN server's two ports; they differ (two ports tell a symmetric NAT). */
  stunPort: number;
  stunAltPort: number;
  /** Longest wait between two STUN re-checks (each wait is drawn in [half, whole]). */
  stunIntervalMs: number;
  /** Use the server relay for peers no direct path reaches (linux dataplane only). */
  relay: boolean;
  resyncIntervalMs: number;
  statusIntervalMs: number;
  cleanupOnExit: boolean;
  logLevel: AgentLogLevel;
}

export const AGENT_DEFAULTS = {
  dataplane: 'render' as DataplaneMode,
  interfaceName: 'fleetplane0',
  listenPort: DEFAULT_LISTEN_PORT,
  localPort: AGENT_LOCAL_DEFAULT_PORT,
  stunPort: STUN_DEFAULT_PORT,
  stunAltPort: STUN_DEFAULT_ALT_PORT,
  stunIntervalMs: 60_000,
  resyncIntervalMs: 300_000,
  statusIntervalMs: 30_000,
  logLevel: 'info' as AgentLogLevel,
};

/** A setting that can't be used; the message names it. */
export class AgentOptionsError extends Error {
  override readonly name = 'AgentOptionsError';
}

type Kind = 'string' | 'port' | 'seconds' | 'bool' | 'list';

interface Spec {
  flag: string;
  env: string;
  kind: Kind;
  help: string;
}

const LOG_LEVELS: readonly AgentLogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** The table the parser and `agent --help` are made from. */
export const AGENT_FLAGS = {
  server: { flag: 'server', env: 'FLEETPLANE_AGENT_SERVER', kind: 'string', help: 'Server base URL, e.g. https://fleet.example.com.' },
  org: { flag: 'org', env: 'FLEETPLANE_AGENT_ORG', kind: 'string', help: "Organization id or name to enroll in (default: the registration key's; a key for another organization is refused); later starts check the state directory belongs to it." },
  registrationKey: { flag: 'registration-key', env: 'FLEETPLANE_AGENT_REGISTRATION_KEY', kind: 'string', help: 'Registration key (first start only).' },
  login: { flag: 'login', env: 'FLEETPLANE_AGENT_LOGIN', kind: 'bool', help: 'First start: sign in as a user instead of a registration key (prints a URL and a code; needs --org).' },
  stateDir: { flag: 'state-dir', env: 'FLEETPLANE_AGENT_STATE_DIR', kind: 'string', help: 'Directory for the key pair, identity and rendered files (required).' },
  caFile: { flag: 'ca-file', env: 'FLEETPLANE_AGENT_CA_FILE', kind: 'string', help: "PEM certificates to trust for an https server, e.g. a private CA (default: the system's)." },
  dataplane: { flag: 'dataplane', env: 'FLEETPLANE_AGENT_DATAPLANE', kind: 'string', help: 'render: write files only (default); linux: apply with ip, wg, nft.' },
  interfaceName: { flag: 'interface', env: 'FLEETPLANE_AGENT_INTERFACE', kind: 'string', help: `WireGuard interface name (default ${AGENT_DEFAULTS.interfaceName}).` },
  hostname: { flag: 'hostname', env: 'FLEETPLANE_AGENT_HOSTNAME', kind: 'string', help: "Hostname to enroll with (default: the machine's)." },
  listenPort: { flag: 'listen-port', env: 'FLEETPLANE_AGENT_LISTEN_PORT', kind: 'port', help: `WireGuard listen port (default ${DEFAULT_LISTEN_PORT}).` },
  endpoints: { flag: 'endpoint', env: 'FLEETPLANE_AGENT_ENDPOINT', kind: 'list', help: 'ADDR:PORT where peers reach this device (repeatable; env: comma separated). Default: interface addresses.' },
  advertiseRoutes: {
    flag: 'advertise-routes',
    env: 'FLEETPLANE_AGENT_ADVERTISE_ROUTES',
    kind: 'list',
    help: 'CIDRs of networks behind this device that peers may route through it, comma separated (repeatable), e.g. 10.20.0.0/16,192.168.5.0/24. Requested at every start (none: the request is cleared); applied once an admin approves them (ctl devices approve-routes).',
  },
  localPort: {
    flag: 'local-port',
    env: 'FLEETPLANE_AGENT_LOCAL_PORT',
    kind: 'port',
    help: `Port of the local API on ${AGENT_LOCAL_HOST} (default ${AGENT_LOCAL_DEFAULT_PORT}: a free one, so agents with different state directories never collide). Whichever port, ${AGENT_LOCAL_HOST}:PORT is in <state-dir>/${AGENT_LOCAL_ADDRESS_FILE} while the agent runs.`,
  },
  stun: { flag: 'stun', env: 'FLEETPLANE_AGENT_STUN', kind: 'bool', help: 'Publish the public address of the WireGuard port, found with STUN (default true; --stun=false: off; needs --dataplane linux).' },
  stunServer: { flag: 'stun-server', env: 'FLEETPLANE_AGENT_STUN_SERVER', kind: 'string', help: 'STUN server host, IPv4 address or name (default: the host of --server).' },
  stunPort: { flag: 'stun-port', env: 'FLEETPLANE_AGENT_STUN_PORT', kind: 'port', help: `The STUN server's first port (default ${STUN_DEFAULT_PORT}).` },
  stunAltPort: { flag: 'stun-alt-port', env: 'FLEETPLANE_AGENT_STUN_ALT_PORT', kind: 'port', help: `The STUN server's second port, which tells a symmetric NAT (default ${STUN_DEFAULT_ALT_PORT}).` },
  relay: { flag: 'relay', env: 'FLEETPLANE_AGENT_RELAY', kind: 'bool', help: 'Reach peers that no direct path reaches through the server relay (default true; --relay=false: off; needs --dataplane linux).' },
  stunIntervalMs: { flag: 'stun-interval', env: 'FLEETPLANE_AGENT_STUN_INTERVAL', kind: 'seconds', help: 'Longest time between STUN re-checks, e.g. 90s or 5m (default 60s; each wait is drawn between half and all of it).' },
  resyncIntervalMs: { flag: 'resync-interval', env: 'FLEETPLANE_AGENT_RESYNC_INTERVAL', kind: 'seconds', help: 'Time between full re-applies that repair drift, e.g. 10m (default 5m).' },
  statusIntervalMs: { flag: 'status-interval', env: 'FLEETPLANE_AGENT_STATUS_INTERVAL', kind: 'seconds', help: 'Time between status reports (last_seen refresh), e.g. 30s (default 30s).' },
  cleanupOnExit: { flag: 'cleanup-on-exit', env: 'FLEETPLANE_AGENT_CLEANUP_ON_EXIT', kind: 'bool', help: 'Remove the interface, firewall table or rendered files on exit.' },
  logLevel: { flag: 'log-level', env: 'FLEETPLANE_AGENT_LOG_LEVEL', kind: 'string', help: 'Log level (default info).' },
} as const satisfies Record<string, Spec>;

type Key = keyof typeof AGENT_FLAGS;
type Raw = Partial<Record<Key, string | string[] | boolean>>;

/** `agent --help`'s examples: what each does, and its arguments after `fleetplane agent` (tests parse every one). */
export const AGENT_EXAMPLES: readonly { readonly what: string; readonly args: readonly string[] }[] = [
  {
    what: 'First start with a registration key (its organization is the one joined); the state directory keeps the identity for later starts',
    args: ['--server', 'https://fleet.example.com', '--registration-key', 'KEY', '--state-dir', '/var/lib/fleetplane'],
  },
  {
    what: 'Apply the mesh on this machine (WireGuard, nftables, routes; needs root), cleaning up on exit',
    args: ['--server', 'https://fleet.example.com', '--state-dir', '/var/lib/fleetplane', '--dataplane', 'linux', '--cleanup-on-exit'],
  },
  {
    what: 'First start signed in as a user instead of a key (prints a URL and a code)',
    args: ['--server', 'https://fleet.example.com', '--login', '--org', 'acme', '--state-dir', '/var/lib/fleetplane'],
  },
  {
    what: 'A server with a private CA; STUN re-checked at most every 5 minutes, full re-applies every 10',
    args: ['--server', 'https://fleet.internal:8443', '--ca-file', '/etc/fleetplane/ca.pem', '--state-dir', '/var/lib/fleetplane', '--stun-interval', '5m', '--resync-interval', '10m'],
  },
  {
    what: 'A subnet router: peers reach these networks through this machine once an admin approves them (fleetplane ctl devices approve-routes)',
    args: ['--server', 'https://fleet.example.com', '--state-dir', '/var/lib/fleetplane', '--dataplane', 'linux', '--advertise-routes', '10.20.0.0/16,192.168.5.0/24'],
  },
];

export function agentHelp(): string {
  const lines = Object.values(AGENT_FLAGS).map((s: Spec) => `  --${s.flag.padEnd(20)} [${s.env}] ${s.help}`);
  const examples = AGENT_EXAMPLES.map((e) => `  # ${e.what}\n  fleetplane agent ${e.args.join(' ')}`);
  return `Usage: fleetplane agent --server URL (--registration-key KEY | --login --org ORG) --state-dir DIR [options]\n\nOptions (flags win over environment variables):\n${lines.join('\n')}\n\nExamples:\n${examples.join('\n')}\n`;
}

const BY_FLAG = new Map<string, Key>(Object.entries(AGENT_FLAGS).map(([k, s]) => [s.flag, k as Key]));

function parseBool(text: string, where: string): boolean {
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  throw new AgentOptionsError(`${where}: expected true or false, got ${JSON.stringify(text)}`);
}

const GRAMMAR: CommandLineGrammar = {
  flags: Object.fromEntries(Object.values(AGENT_FLAGS).map((s: Spec) => [s.flag, { takesValue: s.kind !== 'bool' }])),
};

function fromArgv(argv: readonly string[]): Raw {
  const raw: Raw = {};
  for (const word of parseCommandLine(argv, GRAMMAR)) {
    if (word.kind === 'positional') throw new AgentOptionsError(`unexpected argument ${JSON.stringify(word.value)}`);
    if (word.kind === 'end') throw new AgentOptionsError('unknown flag --');
    if (word.kind === 'unknown') {
      throw new AgentOptionsError(
        word.raw.startsWith('--') ? `unknown flag ${word.raw}${didYouMeanFlag(word.raw, BY_FLAG.keys())}` : `unexpected argument ${JSON.stringify(word.word)}`,
      );
    }
    const key = BY_FLAG.get(word.name);
    if (!key) throw new AgentOptionsError(`unknown flag ${word.raw}`);
    const spec: Spec = AGENT_FLAGS[key];
    if (spec.kind === 'bool') {
      raw[key] = word.value === undefined ? true : parseBool(word.value, word.raw);
      continue;
    }
    if (word.value === undefined) throw new AgentOptionsError(`${word.raw} needs a value`);
    if (spec.kind === 'list') {
      const prev = raw[key];
      raw[key] = [...(Array.isArray(prev) ? prev : []), word.value];
    } else raw[key] = word.value;
  }
  return raw;
}

function fromEnv(env: Readonly<Record<string, string | undefined>>): Raw {
  const raw: Raw = {};
  for (const [key, spec] of Object.entries(AGENT_FLAGS) as [Key, Spec][]) {
    const value = env[spec.env];
    if (value === undefined || value === '') continue;
    if (spec.kind === 'bool') raw[key] = parseBool(value, spec.env);
    else if (spec.kind === 'list') raw[key] = value.split(',').map((v) => v.trim()).filter((v) => v !== '');
    else raw[key] = value;
  }
  return raw;
}

function str(raw: Raw, key: Key): string | undefined {
  const v = raw[key];
  return typeof v === 'string' ? v : undefined;
}

function where(key: Key): string {
  return `--${AGENT_FLAGS[key].flag}`;
}

function port(raw: Raw, key: Key, fallback: number, min: number): number {
  const text = str(raw, key);
  if (text === undefined) return fallback;
  if (!/^\d{1,5}$/.test(text) || Number(text) < min || Number(text) > 65535) {
    throw new AgentOptionsError(`${where(key)}: expected a port ${min}..65535, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

function seconds(raw: Raw, key: Key, fallbackMs: number): number {
  const text = str(raw, key);
  if (text === undefined) return fallbackMs;
  const n = parseDuration(text);
  if (n === undefined || n <= 0 || n > 86_400 * 7) {
    throw new AgentOptionsError(`${where(key)}: expected a duration above 0 and at most 7d (e.g. ${DURATION_EXAMPLES}), got ${JSON.stringify(text)}`);
  }
  return Math.round(n * 1000);
}

function choice<T extends string>(raw: Raw, key: Key, choices: readonly T[], fallback: T): T {
  const text = str(raw, key);
  if (text === undefined) return fallback;
  const found = choices.find((c) => c === text);
  if (found === undefined) throw new AgentOptionsError(`${where(key)}: expected one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
  return found;
}

/**
 * `--advertise-routes`: each value a comma-separated list of CIDRs, written
 * without host bits (the server refuses `10.20.0.1/16`; saying so here
 * stops the agent before it enrolls), and no default route (exit nodes are
 * not supported).
 */
function routes(raw: Raw): string[] {
  const given = raw.advertiseRoutes;
  const words = (Array.isArray(given) ? given : []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  const out: string[] = [];
  for (const word of words) {
    const route = routePrefix(word);
    if ('problem' in route) throw new AgentOptionsError(`${where('advertiseRoutes')}: ${route.problem}`);
    const { network } = route;
    if (network.endsWith('/0')) throw new AgentOptionsError(`${where('advertiseRoutes')}: ${word} is a default route; exit nodes are not supported`);
    if (!out.includes(network)) out.push(network);
  }
  return out;
}

function serverUrl(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AgentOptionsError(`--server: not a URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AgentOptionsError(`--server: expected http(s)://, got ${url.protocol}`);
  return text.replace(/\/+$/, '');
}

/**
 * Parses the agent's flags over its environment. Throws AgentOptionsError
 * naming the bad setting.
 */
export function parseAgentOptions(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): AgentOptions {
  const raw: Raw = { ...fromEnv(env), ...fromArgv(argv) };
  const stateDir = str(raw, 'stateDir');
  if (stateDir === undefined) throw new AgentOptionsError(`${where('stateDir')} (or ${AGENT_FLAGS.stateDir.env}) is required`);
  const interfaceName = str(raw, 'interfaceName') ?? AGENT_DEFAULTS.interfaceName;
  if (!isInterfaceName(interfaceName)) {
    throw new AgentOptionsError(`${where('interfaceName')}: not an interface name (1..15 of A-Z a-z 0-9 _ . -): ${JSON.stringify(interfaceName)}`);
  }
  const endpointsRaw = raw.endpoints;
  const endpoints = Array.isArray(endpointsRaw) ? endpointsRaw : [];
  for (const ep of endpoints) {
    if (!isEndpointAddress(ep)) throw new AgentOptionsError(`${where('endpoints')}: expected ADDR:PORT (or [v6]:PORT), got ${JSON.stringify(ep)}`);
  }
  const advertiseRoutes = routes(raw);
  const hostname = str(raw, 'hostname') ?? osHostname();
  if (hostname.length < 1 || hostname.length > 253) throw new AgentOptionsError(`${where('hostname')}: expected 1..253 characters`);
  const cleanup = raw.cleanupOnExit;
  const stunServer = str(raw, 'stunServer');
  // The probe speaks IPv4 only (src/agent/nat): an IPv4 address or a name, no port, no scheme.
  if (stunServer !== undefined && !/^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(stunServer)) {
    throw new AgentOptionsError(`${where('stunServer')}: expected an IPv4 address or a host name, got ${JSON.stringify(stunServer)}`);
  }
  const stunPort = port(raw, 'stunPort', AGENT_DEFAULTS.stunPort, 1);
  const stunAltPort = port(raw, 'stunAltPort', AGENT_DEFAULTS.stunAltPort, 1);
  if (stunPort === stunAltPort) throw new AgentOptionsError(`${where('stunAltPort')} must differ from ${where('stunPort')}: two ports tell a symmetric NAT`);
  const login = raw.login === true;
  if (login && str(raw, 'registrationKey') !== undefined) throw new AgentOptionsError(`${where('login')} and ${where('registrationKey')} exclude each other`);
  if (login && str(raw, 'org') === undefined) throw new AgentOptionsError(`${where('login')} needs ${where('org')}: a user may be a member of several organizations`);
  return {
    ...(login ? { login: true as const } : {}),
    server: serverUrl(str(raw, 'server')),
    org: str(raw, 'org'),
    registrationKey: str(raw, 'registrationKey'),
    stateDir,
    caFile: str(raw, 'caFile'),
    dataplane: choice(raw, 'dataplane', ['render', 'linux'] as const, AGENT_DEFAULTS.dataplane),
    interfaceName,
    hostname,
    listenPort: port(raw, 'listenPort', AGENT_DEFAULTS.listenPort, 1),
    endpoints: [...new Set(endpoints)],
    advertiseRoutes,
    localPort: port(raw, 'localPort', AGENT_DEFAULTS.localPort, 0),
    stun: raw.stun !== false,
    relay: raw.relay !== false,
    stunServer,
    stunPort,
    stunAltPort,
    stunIntervalMs: seconds(raw, 'stunIntervalMs', AGENT_DEFAULTS.stunIntervalMs),
    resyncIntervalMs: seconds(raw, 'resyncIntervalMs', AGENT_DEFAULTS.resyncIntervalMs),
    statusIntervalMs: seconds(raw, 'statusIntervalMs', AGENT_DEFAULTS.statusIntervalMs),
    cleanupOnExit: cleanup === true,
    logLevel: choice(raw, 'logLevel', LOG_LEVELS, AGENT_DEFAULTS.logLevel),
  };
}
