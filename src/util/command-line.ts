/**
 * The one command-line parser of `fleetplane serve`, `agent`, `ctl` and
 * `npm run bench`. node:util's parseArgs splits the words: `--name=value`,
 * `--name value`, `-x value`, `-xvalue`, grouped letters `-hw`, and `--`
 * ending the flags. Each command gives its table of flags and turns the
 * words that come back into its settings, with its own messages: nothing is
 * rejected here.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A flag a command knows. */
export interface FlagDefinition {
  /** It takes a value (`--org ORG`); else it is a switch (`--watch`), which may still be written `--watch=false`. */
  takesValue: boolean;
  /** One letter: `-o json`. */
  short?: string;
}

export interface CommandLineGrammar {
  /** By name, without the dashes. */
  flags: Readonly<Record<string, FlagDefinition>>;
  /**
   * A word that looks like a flag (`--x`, `-x`; not `-`, `--` or a negative
   * number) is not taken as the value of the flag before it, which then has
   * none (ctl). By default it is taken (`--server --org`: the server is
   * "--org").
   */
  refuseFlagLikeValues?: boolean;
}

/** One word of a command line, or one flag of a group of letters, in command-line order. */
export type CommandLineWord =
  /**
   * A known flag as written (`raw`: `--org`, `-o`). `value`: a value flag's
   * value, undefined when it has none; a switch's text after `=`, else undefined.
   */
  | { kind: 'flag'; name: string; raw: string; value: string | undefined }
  /** An unknown flag: `raw` as in `flag`, `word` the whole word it is in (`--name=value`, `-xyz`). The rest of a group of letters is not read. */
  | { kind: 'unknown'; raw: string; word: string }
  /** Not a flag: arguments, `-`, negative numbers, and every word after `--`. */
  | { kind: 'positional'; value: string }
  /** `--`: every word after it is positional. */
  | { kind: 'end' };

/** `-5`, `-1.5`: a value, not a group of letters. */
const NEGATIVE_NUMBER = /^-\d/;

function looksLikeFlag(word: string): boolean {
  if (word.startsWith('--')) return word.length > 2;
  return word.length > 1 && word.startsWith('-') && !NEGATIVE_NUMBER.test(word);
}

/** Splits `argv` (the words after the command) by `grammar`. */
export function parseCommandLine(argv: readonly string[], grammar: CommandLineGrammar): CommandLineWord[] {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, flag] of Object.entries(grammar.flags)) {
    options[name] = { type: flag.takesValue ? 'string' : 'boolean', ...(flag.short !== undefined ? { short: flag.short } : {}) };
  }
  const words: CommandLineWord[] = [];
  let start = 0;
  // parseArgs can't be told to leave a word alone; where a word must be read afresh, it parses again from that word.
  parsing: while (start < argv.length) {
    const { tokens } = parseArgs({ args: argv.slice(start), options, strict: false, allowPositionals: true, tokens: true });
    let skipped = -1;
    for (const token of tokens) {
      if (token.kind === 'positional') {
        words.push({ kind: 'positional', value: token.value });
        continue;
      }
      if (token.kind === 'option-terminator') {
        words.push({ kind: 'end' });
        continue;
      }
      const at = start + token.index;
      // It took the next word as its value.
      const took = token.inlineValue === false;
      if (token.index === skipped) {
        if (took) {
          start = at + 1;
          continue parsing;
        }
        continue;
      }
      const word = argv[at] ?? '';
      if (NEGATIVE_NUMBER.test(word)) {
        words.push({ kind: 'positional', value: word });
        skipped = token.index;
        continue;
      }
      if (!Object.hasOwn(grammar.flags, token.name)) {
        words.push({ kind: 'unknown', raw: token.rawName, word });
        if (!token.rawName.startsWith('--')) skipped = token.index;
        continue;
      }
      const value = typeof token.value === 'string' ? token.value : undefined;
      if (took && grammar.refuseFlagLikeValues && value !== undefined && looksLikeFlag(value)) {
        words.push({ kind: 'flag', name: token.name, raw: token.rawName, value: undefined });
        start = at + 1;
        continue parsing;
      }
      // `-o=json` as `-ojson`.
      const short = token.inlineValue === true && !token.rawName.startsWith('--');
      words.push({ kind: 'flag', name: token.name, raw: token.rawName, value: short && value !== undefined ? value.replace(/^=/, '') : value });
    }
    break;
  }
  return words;
}
