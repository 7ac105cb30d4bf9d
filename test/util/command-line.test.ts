/** The one command-line parser (src/util/command-line.ts) that serve, agent, ctl and bench read their flags with. */
import { describe, expect, it } from 'vitest';
import { parseCommandLine, type CommandLineGrammar } from '../../src/util/command-line.js';

const CTL_LIKE: CommandLineGrammar = {
  flags: { org: { takesValue: true }, output: { takesValue: true, short: 'o' }, watch: { takesValue: false, short: 'w' }, help: { takesValue: false, short: 'h' } },
  refuseFlagLikeValues: true,
};
const TAKING: CommandLineGrammar = { flags: { server: { takesValue: true }, org: { takesValue: true }, login: { takesValue: false } } };

describe('parseCommandLine', () => {
  it('reads --name=value, --name value, -x value, -xvalue, -x=value and grouped switches', () => {
    expect(parseCommandLine(['--org=a', '--org', 'b', '-o', 'json', '-owide', '-o=yaml', '-hw'], CTL_LIKE)).toEqual([
      { kind: 'flag', name: 'org', raw: '--org', value: 'a' },
      { kind: 'flag', name: 'org', raw: '--org', value: 'b' },
      { kind: 'flag', name: 'output', raw: '-o', value: 'json' },
      { kind: 'flag', name: 'output', raw: '-o', value: 'wide' },
      { kind: 'flag', name: 'output', raw: '-o', value: 'yaml' },
      { kind: 'flag', name: 'help', raw: '-h', value: undefined },
      { kind: 'flag', name: 'watch', raw: '-w', value: undefined },
    ]);
  });

  it('gives a switch the text after = and a value flag at the end no value', () => {
    expect(parseCommandLine(['--watch=false', '--org'], CTL_LIKE)).toEqual([
      { kind: 'flag', name: 'watch', raw: '--watch', value: 'false' },
      { kind: 'flag', name: 'org', raw: '--org', value: undefined },
    ]);
  });

  it('keeps -, negative numbers and every word after -- as positionals', () => {
    expect(parseCommandLine(['-', '-5', 'x', '--', '-w', '--org'], CTL_LIKE)).toEqual([
      { kind: 'positional', value: '-' },
      { kind: 'positional', value: '-5' },
      { kind: 'positional', value: 'x' },
      { kind: 'end' },
      { kind: 'positional', value: '-w' },
      { kind: 'positional', value: '--org' },
    ]);
  });

  it('reports an unknown flag with the word it is in, and reads no further letters of its group', () => {
    expect(parseCommandLine(['--nope=1', '-xo', 'v', '-hy'], CTL_LIKE)).toEqual([
      { kind: 'unknown', raw: '--nope', word: '--nope=1' },
      { kind: 'unknown', raw: '-x', word: '-xo' },
      { kind: 'positional', value: 'v' },
      { kind: 'flag', name: 'help', raw: '-h', value: undefined },
      { kind: 'unknown', raw: '-y', word: '-hy' },
    ]);
  });

  it('with refuseFlagLikeValues, leaves a flag-like word to be read as a flag', () => {
    expect(parseCommandLine(['--org', '--watch', '-o', '-5'], CTL_LIKE)).toEqual([
      { kind: 'flag', name: 'org', raw: '--org', value: undefined },
      { kind: 'flag', name: 'watch', raw: '--watch', value: undefined },
      { kind: 'flag', name: 'output', raw: '-o', value: '-5' },
    ]);
  });

  it('by default, takes the next word as the value whatever it looks like', () => {
    expect(parseCommandLine(['--server', '--org', 'x', '--login', 'y'], TAKING)).toEqual([
      { kind: 'flag', name: 'server', raw: '--server', value: '--org' },
      { kind: 'positional', value: 'x' },
      { kind: 'flag', name: 'login', raw: '--login', value: undefined },
      { kind: 'positional', value: 'y' },
    ]);
  });
});
