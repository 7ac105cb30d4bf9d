import { parseCommandLine, type CommandLineGrammar } from '../../util/command-line.js';
import { didYouMeanFlag } from '../../util/nearest-name.js';
import { FLAGS, isFlagName, type BooleanFlag, type FlagName, type FlagSpec, type ListFlag, type StringFlag } from './flags.js';

/** One flag as written, in command-line order (rule flags depend on it: `--from` belongs to the `--allow` before it). */
export interface FlagOccurrence {
  name: FlagName;
  /** As written: `--org`, `-o`. */
  raw: string;
  value: string | boolean;
}

/**
 * A command line split into words and flags. Nothing is rejected here:
 * `problems` (unknown flags, missing values) are reported once the command
 * is known, so that the message can name it.
 */
export interface ParsedArgv {
  positionals: string[];
  occurrences: FlagOccurrence[];
  problems: string[];
}

const BOOLEAN_TEXT: Readonly<Record<string, boolean>> = { true: true, false: false, yes: true, no: false, '1': true, '0': false };

/** ctl's flags as the shared parser takes them; a value is never a word that looks like a flag. */
const GRAMMAR: CommandLineGrammar = {
  flags: Object.fromEntries(
    (Object.keys(FLAGS) as FlagName[]).map((name) => {
      const spec: FlagSpec = FLAGS[name];
      return [name, { takesValue: spec.kind !== 'boolean', ...(spec.short !== undefined ? { short: spec.short } : {}) }];
    }),
  ),
  refuseFlagLikeValues: true,
};

/** `--name[=value]`, `--name value`, `-x value`, `-xvalue`, `-hw`; `--` ends the flags. */
export function parseArgv(argv: readonly string[]): ParsedArgv {
  const out: ParsedArgv = { positionals: [], occurrences: [], problems: [] };
  for (const word of parseCommandLine(argv, GRAMMAR)) {
    if (word.kind === 'positional') out.positionals.push(word.value);
    else if (word.kind === 'unknown') out.problems.push(`unknown flag ${word.raw}${didYouMeanFlag(word.raw, Object.keys(FLAGS))}`);
    else if (word.kind === 'flag' && isFlagName(word.name)) take(out, word.name, word.raw, word.value);
  }
  return out;
}

function take(out: ParsedArgv, name: FlagName, raw: string, value: string | undefined): void {
  const spec: FlagSpec = FLAGS[name];
  if (spec.kind === 'boolean') {
    if (value === undefined) return void out.occurrences.push({ name, raw, value: true });
    const on = BOOLEAN_TEXT[value.toLowerCase()];
    if (on === undefined) out.problems.push(`${raw} is true or false, not ${JSON.stringify(value)}`);
    else out.occurrences.push({ name, raw, value: on });
    return;
  }
  if (value === undefined) out.problems.push(`flag ${raw} needs a value (${spec.value ?? 'VALUE'})`);
  else out.occurrences.push({ name, raw, value });
}

/** Typed reads of the flags a command was given. */
export class Flags {
  constructor(readonly occurrences: readonly FlagOccurrence[]) {}

  /** The last value given (a later flag wins, as in most CLIs). */
  string(name: StringFlag): string | undefined {
    const last = this.occurrences.findLast((o) => o.name === name);
    return typeof last?.value === 'string' ? last.value : undefined;
  }

  boolean(name: BooleanFlag): boolean | undefined {
    const last = this.occurrences.findLast((o) => o.name === name);
    return typeof last?.value === 'boolean' ? last.value : undefined;
  }

  list(name: ListFlag): string[] {
    return this.occurrences.filter((o) => o.name === name && typeof o.value === 'string').map((o) => String(o.value));
  }

  has(name: FlagName): boolean {
    return this.occurrences.some((o) => o.name === name);
  }

  /** The occurrences of these flags, in command-line order. */
  ordered(names: readonly FlagName[]): FlagOccurrence[] {
    return this.occurrences.filter((o) => names.includes(o.name));
  }
}
