import { UsageError } from '../exit-codes.js';
import { ConfigError, type ConfigFile, type ContextEntry } from './config-file.js';

/** The flags a connection is made of: ctl's Flags, or another command's (`fleetplane sync`) with the same names. */
export interface ConnectionFlags {
  string(name: 'server' | 'token' | 'context' | 'config' | 'ca-file' | 'org'): string | undefined;
}

/** Where a command talks to, and as whom, after flags, environment and context are merged. */
export interface Connection {
  server: string;
  token: string;
  /** Organization name or id, when one was given (flag or context). */
  org: string | undefined;
  caFile: string | undefined;
  /** The context used, if any. */
  context: string | undefined;
}

type Env = Readonly<Record<string, string | undefined>>;

const sameServer = (a: string, b: string): boolean => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/** The context `--context` names, else the current one; undefined when there is none. */
export function chooseContext(flags: ConnectionFlags, config: ConfigFile, path: string): { name: string; entry: ContextEntry } | undefined {
  const asked = flags.string('context');
  if (asked !== undefined) {
    const entry = config.contexts[asked];
    if (!entry) throw new UsageError(`--context ${asked}: no such context in ${path} (see: fleetplane ctl config get-contexts)`);
    return { name: asked, entry };
  }
  const current = config['current-context'];
  if (current === undefined) return undefined;
  const entry = config.contexts[current];
  if (!entry) throw new ConfigError(`${path}: the current context "${current}" is not defined`);
  return { name: current, entry };
}

/**
 * Flags win over the environment (FLEETPLANE_URL, FLEETPLANE_TOKEN, FLEETPLANE_CA_FILE), which
 * wins over the context. The context's token, organization and CA file
 * apply only to the context's own server: a server given by flag or
 * environment that differs from it never receives the context's token.
 */
export function resolveConnection(flags: ConnectionFlags, env: Env, config: ConfigFile, path: string): Connection {
  const chosen = chooseContext(flags, config, path);
  const fromContext = chosen?.entry;
  const server = flags.string('server') ?? nonEmpty(env['FLEETPLANE_URL']) ?? fromContext?.server;
  if (server === undefined) {
    throw new UsageError('no server: pass --server, set FLEETPLANE_URL, or add a context (fleetplane ctl config set-context --help)');
  }
  if (!/^https?:\/\/[^/]/.test(server)) throw new UsageError(`the server must be an http(s) URL, not ${JSON.stringify(server)}`);
  const own = fromContext !== undefined && sameServer(server, fromContext.server) ? fromContext : undefined;
  const token = flags.string('token') ?? nonEmpty(env['FLEETPLANE_TOKEN']) ?? own?.token;
  if (token === undefined || token === '') {
    const why = fromContext !== undefined && own === undefined ? ` (context "${chosen?.name ?? ''}" is for ${fromContext.server})` : '';
    throw new UsageError(`no token for ${server}: pass --token or set FLEETPLANE_TOKEN${why}`);
  }
  return {
    server,
    token,
    org: nonEmpty(flags.string('org')) ?? nonEmpty(own?.org),
    caFile: nonEmpty(flags.string('ca-file')) ?? nonEmpty(env['FLEETPLANE_CA_FILE']) ?? nonEmpty(own?.['ca-file']),
    context: own === undefined ? undefined : chosen?.name,
  };
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}
