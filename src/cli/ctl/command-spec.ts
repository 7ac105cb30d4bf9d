import type { ExitCode } from '../exit-codes.js';
import type { CtlContext, LocalContext } from './context.js';
import type { FlagName } from './flags.js';

/** A flag a command accepts, with help (and a value placeholder) of its own where the default doesn't fit. */
export type FlagUse = FlagName | { name: FlagName; help: string; value?: string };

interface CommandBase {
  name: string;
  aliases?: readonly string[];
  /** Positional arguments as shown in usage, e.g. `<device>`. */
  args?: string;
  summary: string;
  /** Paragraphs shown by --help after the usage (grammar, defaults). */
  details?: string;
  /** Flags besides --help (and the connection flags of remote commands). */
  flags: readonly FlagUse[];
  examples: readonly string[];
}

/**
 * What a command's run resolves to: nothing (exit 0), or an exit code for
 * an outcome that is not an error but not 0 either, having printed what it
 * has to say (`policy diff`: 1 when something would change). Errors throw.
 */
export type RunResult = void | ExitCode;

/** A command that talks to a server: the connection flags apply and it gets a client. */
export interface RemoteCommand extends CommandBase {
  kind: 'remote';
  run(ctx: CtlContext, args: readonly string[]): Promise<RunResult>;
}

/** A command that works on this machine only (`config ...`). */
export interface LocalCommand extends CommandBase {
  kind: 'local';
  run(ctx: LocalContext, args: readonly string[]): Promise<RunResult>;
}

export type Command = RemoteCommand | LocalCommand;

/** A resource (or `config`) and its verbs: `fleetplane ctl devices list`. */
export interface CommandGroup {
  name: string;
  /** Other names it answers to: singular forms, short forms. */
  aliases: readonly string[];
  summary: string;
  commands: readonly Command[];
}

export type Entry = Command | CommandGroup;

export function isGroup(entry: Entry): entry is CommandGroup {
  return 'commands' in entry;
}

export function flagName(use: FlagUse): FlagName {
  return typeof use === 'string' ? use : use.name;
}

/** Finds a group or command by name or alias. */
export function findEntry<T extends { name: string; aliases?: readonly string[] }>(entries: readonly T[], word: string): T | undefined {
  return entries.find((e) => e.name === word || (e.aliases ?? []).includes(word));
}
