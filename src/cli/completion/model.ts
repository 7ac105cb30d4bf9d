import { AGENT_FLAGS } from '../../agent/options.js';
import { SETTING_SPECS } from '../../server/config/settings.js';
import { flagName, isGroup, type Command } from '../ctl/command-spec.js';
import { ENTRIES } from '../ctl/commands.js';
import { CONNECTION_FLAGS, FLAGS, type FlagName, type FlagSpec } from '../ctl/flags.js';
import { CLI_KINDS } from '../ctl/kinds.js';
import { OUTPUT_MODES } from '../ctl/output.js';
import { WATCH_KINDS } from '../../protocol/wire.js';
import { SYNC_FLAGS } from '../../sync/options.js';

/** A flag as completion offers it. */
export interface CompletionFlag {
  long: string;
  short: string | undefined;
  /** Takes a value (the next word is not a command word). */
  takesValue: boolean;
  help: string;
  /** Fixed values to offer after it, if any. */
  values: readonly string[];
}

/** A command after `fleetplane`: its words (aliases included), the words it takes next, its flags. */
export interface CompletionNode {
  /** Each entry: the spellings of one word; `[['ctl'], ['devices', 'device', 'dev'], ['list']]`. */
  path: ReadonlyArray<readonly string[]>;
  /** Words offered next (subcommands, verbs, kinds). */
  words: readonly string[];
  /** A command proper: it still applies when arguments follow it (`ctl watch device ` offers kinds again). */
  leaf: boolean;
  flags: readonly CompletionFlag[];
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** Fixed values of the flags that have them: `-o` the output modes, `ctl audit --kind` each kind as ctl spells it. */
const FLAG_VALUES: Partial<Record<FlagName, readonly string[]>> = { output: OUTPUT_MODES, kind: CLI_KINDS };

function ctlFlag(name: FlagName): CompletionFlag {
  const spec: FlagSpec = FLAGS[name];
  return {
    long: name,
    short: spec.short,
    takesValue: spec.kind !== 'boolean',
    help: spec.help,
    values: FLAG_VALUES[name] ?? [],
  };
}

function commandFlags(c: Command): CompletionFlag[] {
  const names = [...c.flags.map(flagName), 'help' as const, ...(c.kind === 'remote' ? CONNECTION_FLAGS : [])];
  return [...new Set(names)].map(ctlFlag);
}

function commandWords(c: Command): string[] {
  return c.name === 'watch' ? [...WATCH_KINDS, 'all'] : [];
}

const plain = (long: string, help: string, takesValue: boolean): CompletionFlag => ({ long, short: undefined, takesValue, help, values: [] });

/** Every command of `fleetplane`, from the same tables the commands parse with. */
export function completionTree(): CompletionNode[] {
  const ctl = ['ctl'];
  const nodes: CompletionNode[] = [
    { path: [], words: ['serve', 'agent', 'ctl', 'sync', 'completion'], leaf: false, flags: [plain('help', 'show help', false), plain('version', 'print the version', false)] },
    { path: [['completion']], words: SHELLS, leaf: false, flags: [] },
    { path: [['serve']], words: [], leaf: true, flags: SETTING_SPECS.map((s) => plain(s.flag, s.help, s.kind !== 'bool')) },
    { path: [['agent']], words: [], leaf: true, flags: Object.values(AGENT_FLAGS).map((f) => plain(f.flag, f.help, f.kind !== 'bool')) },
    { path: [['sync']], words: [], leaf: true, flags: [...Object.entries(SYNC_FLAGS).map(([flag, s]) => plain(flag, s.help, true)), plain('help', 'show help', false)] },
    { path: [ctl], words: [...ENTRIES.map((e) => e.name), 'help'], leaf: false, flags: [ctlFlag('help'), ctlFlag('version')] },
  ];
  for (const entry of ENTRIES) {
    if (!isGroup(entry)) {
      nodes.push({ path: [ctl, [entry.name]], words: commandWords(entry), leaf: true, flags: commandFlags(entry) });
      continue;
    }
    const group = [entry.name, ...entry.aliases];
    nodes.push({ path: [ctl, group], words: entry.commands.map((c) => c.name), leaf: false, flags: [ctlFlag('help')] });
    for (const c of entry.commands) nodes.push({ path: [ctl, group, [c.name, ...(c.aliases ?? [])]], words: [], leaf: true, flags: commandFlags(c) });
  }
  return nodes;
}

/** Flags that take a value, anywhere: the word after one is never a command word. */
export function valueFlags(nodes: readonly CompletionNode[]): string[] {
  const out = new Set<string>();
  for (const n of nodes) {
    for (const f of n.flags) {
      if (!f.takesValue) continue;
      out.add(`--${f.long}`);
      if (f.short) out.add(`-${f.short}`);
    }
  }
  return [...out].sort();
}
