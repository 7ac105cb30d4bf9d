import { EXIT, UsageError } from '../exit-codes.js';
import { versionLine } from '../version.js';
import { Flags, parseArgv } from './argv.js';
import { flagName, type Command, type RemoteCommand } from './command-spec.js';
import { CommandError, resolveCommand } from './commands.js';
import { configPath } from './config-file.js';
import { openClient } from './connect.js';
import type { CtlContext, LocalContext, OrgRef } from './context.js';
import { describeError, oneLine } from './describe-error.js';
import { CONNECTION_FLAGS, type FlagName } from './flags.js';
import { commandHelp, groupHelp, rootHelp } from './help.js';
import { resolveOrganization } from './names.js';
import { Output, parseOutputMode, type Writable } from './output.js';

/** What `fleetplane ctl` runs with; tests pass buffers, their own environment and clock. */
export interface CtlIo {
  stdout: Writable;
  stderr: Writable;
  /** FLEETPLANE_URL, FLEETPLANE_TOKEN, FLEETPLANE_CONFIG, XDG_CONFIG_HOME, HOME. */
  env: Readonly<Record<string, string | undefined>>;
  /** Aborting (Ctrl-C) ends a watch with exit code 0; any other command fails (exit 1). */
  signal?: AbortSignal;
  /** Milliseconds clock relative times (LAST SEEN) are counted from; default Date.now. */
  now?: () => number;
  /** Where relative paths (--ca-file of set-context) start; default the process's. */
  cwd?: string;
  /** What `-f -` reads; default the process's stdin. */
  stdin?: AsyncIterable<string | Uint8Array>;
}

/**
 * `fleetplane ctl ...` (argv without `ctl`). Resolves to the exit code (see
 * src/cli/exit-codes.ts): 0 success, 1 runtime failure, 2 bad usage.
 * Errors are one line on stderr, results go to stdout.
 */
export async function runCtl(argv: readonly string[], io: CtlIo): Promise<number> {
  const parsed = parseArgv(argv);
  let where = '';
  try {
    const flags = new Flags(parsed.occurrences);
    let words = parsed.positionals;
    let help = flags.boolean('help') === true;
    if (words[0] === 'help') {
      words = words.slice(1);
      help = true;
    }
    let resolved;
    try {
      resolved = resolveCommand(words);
    } catch (err) {
      if (err instanceof CommandError) where = err.path;
      throw err;
    }
    if (resolved.type === 'root') {
      if (help) return print(io.stdout, rootHelp(), EXIT.ok);
      const problem = parsed.problems[0];
      if (problem !== undefined) throw new UsageError(problem);
      if (flags.boolean('version') === true) return print(io.stdout, versionLine(), EXIT.ok);
      return print(io.stderr, rootHelp(), EXIT.usage);
    }
    where = resolved.path;
    if (resolved.type === 'group') {
      if (help) return print(io.stdout, groupHelp(resolved.group), EXIT.ok);
      throw new UsageError(`missing verb: ${resolved.group.commands.map((c) => c.name).join(', ')}`);
    }
    const { command, args } = resolved;
    if (help) return print(io.stdout, commandHelp(command, resolved.path), EXIT.ok);
    const problem = parsed.problems[0] ?? misplacedFlag(command, flags);
    if (problem !== undefined) throw new UsageError(problem);
    const local: LocalContext = {
      flags,
      out: new Output(parseOutputMode(flags.string('output')), io.stdout, io.now ?? Date.now),
      stderr: io.stderr,
      env: io.env,
      signal: io.signal,
      configPath: configPath(flags.string('config'), io.env),
      cwd: io.cwd ?? process.cwd(),
      stdin: io.stdin ?? process.stdin,
    };
    const code = command.kind === 'local' ? await command.run(local, args) : await command.run(await remoteContext(local, command), args);
    return code ?? EXIT.ok;
  } catch (err) {
    return fail(io, where, err);
  }
}

function print(to: Writable, text: string, code: number): number {
  to.write(text);
  return code;
}

/** A known flag the command doesn't take. */
function misplacedFlag(command: Command, flags: Flags): string | undefined {
  const allowed = new Set<FlagName>(['help', ...command.flags.map(flagName), ...(command.kind === 'remote' ? CONNECTION_FLAGS : [])]);
  const wrong = flags.occurrences.find((o) => !allowed.has(o.name));
  return wrong === undefined ? undefined : `flag ${wrong.raw} does not apply here`;
}

async function remoteContext(local: LocalContext, command: RemoteCommand): Promise<CtlContext> {
  const { client, connection } = await openClient(local.flags, local.env, local.stderr);
  const takesOrg = command.flags.some((f) => flagName(f) === 'org');
  let org: Promise<OrgRef> | undefined;
  return {
    ...local,
    client,
    org: () =>
      (org ??= (async () => {
        if (!takesOrg || connection.org === undefined) {
          throw new UsageError('--org is required for this command (or set a default: fleetplane ctl config set-context NAME --org ORG)');
        }
        return resolveOrganization(client, connection.org, local.signal);
      })()),
  };
}

function fail(io: CtlIo, where: string, err: unknown): number {
  if (err instanceof UsageError) {
    io.stderr.write(`fleetplane ctl${where ? ` ${where}` : ''}: ${oneLine(err.message)} (see --help)\n`);
    return EXIT.usage;
  }
  io.stderr.write(`error: ${describeError(err)}\n`);
  return EXIT.failure;
}
