import { FLAGS, flagByShort, isFlagName, type BooleanFlag, type FlagName, type FlagSpec, type ListFlag, type StringFlag } from './flags.js';

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

/** A word that is meant as a flag rather than a value (`-` alone and negative numbers are values). */
function looksLikeFlag(arg: string): boolean {
  if (arg.startsWith('--')) return arg.length > 2;
  return arg.length > 1 && arg.startsWith('-') && !/^-\d/.test(arg);
}

/** `--name[=value]`, `--name value`, `-x value`, `-xvalue`, `-hw`; `--` ends the flags. */
export function parseArgv(argv: readonly string[]): ParsedArgv {
  const out: ParsedArgv = { positionals: [], occurrences: [], problems: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!looksLikeFlag(arg)) {
      out.positionals.push(arg);
      continue;
    }
    const next = (): string | undefined => {
      const candidate = argv[i + 1];
      if (candidate === undefined || looksLikeFlag(candidate)) return undefined;
      i++;
      return candidate;
    };
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = arg.slice(2, eq < 0 ? undefined : eq);
      const inline = eq < 0 ? undefined : arg.slice(eq + 1);
      const raw = `--${name}`;
      if (!isFlagName(name)) out.problems.push(`unknown flag ${raw}`);
      else take(out, name, raw, inline, next);
      continue;
    }
    // Short flags: booleans may be grouped (-hw); a string flag takes the rest of the word or the next one.
    for (let j = 1; j < arg.length; j++) {
      const letter = arg[j] ?? '';
      const name = flagByShort(letter);
      const raw = `-${letter}`;
      if (name === undefined) {
        out.problems.push(`unknown flag ${raw}`);
        break;
      }
      const spec: FlagSpec = FLAGS[name];
      if (spec.kind === 'boolean') {
        out.occurrences.push({ name, raw, value: true });
        continue;
      }
      const rest = arg.slice(j + 1).replace(/^=/, '');
      take(out, name, raw, rest === '' ? undefined : rest, next);
      break;
    }
  }
  return out;
}

function take(out: ParsedArgv, name: FlagName, raw: string, inline: string | undefined, next: () => string | undefined): void {
  const spec: FlagSpec = FLAGS[name];
  if (spec.kind === 'boolean') {
    if (inline === undefined) return void out.occurrences.push({ name, raw, value: true });
    const value = BOOLEAN_TEXT[inline.toLowerCase()];
    if (value === undefined) out.problems.push(`${raw} is true or false, not ${JSON.stringify(inline)}`);
    else out.occurrences.push({ name, raw, value });
    return;
  }
  const value = inline ?? next();
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
