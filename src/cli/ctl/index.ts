import { FleetplaneClient, FleetplaneError } from '../../client/index.js';
import { parseCtlArgs, type CtlArgs } from './args.js';
import type { CtlContext } from './context.js';
import { runRegistrationKeys, runTokens } from './credentials.js';
import { Output, type Writable } from './output.js';
import { RESOURCES } from './resources.js';
import { runRpc } from './rpc.js';
import { EXIT, USAGE, UsageError } from './usage.js';
import { runWatch } from './watch.js';

export { USAGE, EXIT } from './usage.js';

/** What `fleetplane ctl` runs with; tests pass buffers and their own environment. */
export interface CtlIo {
  stdout: Writable;
  stderr: Writable;
  /** Reads FLEETPLANE_URL and FLEETPLANE_TOKEN. */
  env: Readonly<Record<string, string | undefined>>;
  /** Aborting ends `watch` with exit code 0; any other command fails (exit 1). */
  signal?: AbortSignal;
}

/**
 * `fleetplane ctl ...` (argv without `ctl`). Resolves to the exit code:
 * 0 success, 1 the server or the network failed, 2 bad usage. Errors are one
 * line on stderr; results go to stdout.
 */
export async function runCtl(argv: readonly string[], io: CtlIo): Promise<number> {
  let args: CtlArgs;
  try {
    args = parseCtlArgs(argv);
  } catch (err) {
    return fail(io, err);
  }
  if (args.help) {
    io.stdout.write(`${USAGE}\n`);
    return EXIT.ok;
  }
  if (args.positionals.length === 0) {
    io.stderr.write(`${USAGE}\n`);
    return EXIT.usage;
  }
  try {
    const server = args.values.server ?? io.env['FLEETPLANE_URL'];
    const token = args.values.token ?? io.env['FLEETPLANE_TOKEN'];
    if (!server) throw new UsageError('no server: pass --server or set FLEETPLANE_URL');
    if (!token) throw new UsageError('no token: pass --token or set FLEETPLANE_TOKEN');
    if (!/^https?:\/\//.test(server)) throw new UsageError(`--server must be an http(s) URL, not ${JSON.stringify(server)}`);
    const ctx: CtlContext = {
      client: new FleetplaneClient({ baseUrl: server, token }),
      args,
      out: new Output(args.output, io.stdout),
      stderr: io.stderr,
      signal: io.signal,
    };
    await dispatch(ctx, args.positionals);
    return EXIT.ok;
  } catch (err) {
    return fail(io, err);
  }
}

async function dispatch(ctx: CtlContext, positionals: readonly string[]): Promise<void> {
  const [resource, verb, ...rest] = positionals;
  if (resource === 'watch') return runWatch(ctx, positionals.slice(1));
  if (resource === 'tokens') return runTokens(ctx, verb, rest);
  if (resource === 'registration-keys') return runRegistrationKeys(ctx, verb, rest);
  if (resource === 'devices' && verb === 'rpc') return runRpc(ctx, rest);
  const command = resource === undefined ? undefined : RESOURCES[resource];
  if (!command) throw new UsageError(`unknown resource ${JSON.stringify(resource)}`);
  return command(ctx, verb, rest);
}

function fail(io: CtlIo, err: unknown): number {
  if (err instanceof UsageError) {
    io.stderr.write(`fleetplane ctl: ${err.message} (see 'fleetplane ctl --help')\n`);
    return EXIT.usage;
  }
  io.stderr.write(`error: ${describe(err)}\n`);
  return EXIT.api;
}

/** One line: the message, and for API errors the code and HTTP status. */
function describe(err: unknown): string {
  const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
  if (err instanceof FleetplaneError) {
    const where = err.status ? `, HTTP ${err.status}` : '';
    return oneLine(`${err.message} (${err.code}${where})`);
  }
  return oneLine(err instanceof Error ? err.message : String(err));
}
