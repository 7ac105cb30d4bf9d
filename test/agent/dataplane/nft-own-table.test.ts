import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertOwnTableOnly, ForeignRulesetError, renderNftablesRemoval } from '../../../src/agent/dataplane/index.js';
import { GOLDEN_DIR } from './golden.js';

const golden = readdirSync(GOLDEN_DIR).filter((f) => f.startsWith('nftables-'));
const full = readFileSync(join(GOLDEN_DIR, 'nftables-full.conf'), 'utf8');

/** The full golden script with `line` put after line `at` (1-based). */
function withLine(at: number, line: string): string {
  const lines = full.split('\n');
  lines.splice(at, 0, line);
  return lines.join('\n');
}

describe('assertOwnTableOnly (the check before nft -f)', () => {
  it.each(golden)('accepts the rendered script %s', (file) => {
    expect(() => assertOwnTableOnly(readFileSync(join(GOLDEN_DIR, file), 'utf8'))).not.toThrow();
  });

  it('accepts the removal script', () => {
    expect(() => assertOwnTableOnly(renderNftablesRemoval())).not.toThrow();
  });

  const refused: [string, string][] = [
    ['flush ruleset before the table', withLine(1, 'flush ruleset')],
    ['flush ruleset after the table', `${full}flush ruleset\n`],
    ['another table', `${full}table ip filter {\n\tchain input {\n\t\ttype filter hook input priority 0; policy drop;\n\t}\n}\n`],
    ['deleting another table', withLine(1, 'delete table ip filter')],
    ['declaring another table', withLine(1, 'table ip filter')],
    ['an include', withLine(1, 'include "/etc/nftables.conf"')],
    ['a define', withLine(1, 'define x = 1')],
    ['a rule that ends its chain and the table with ;', withLine(5, '\t\tip saddr 1.2.3.4 accept; }; }; flush ruleset')],
    ['a rule that closes its chain with a brace', withLine(5, '\t\tip saddr 1.2.3.4 accept }')],
    ['a rule with a comment hiding the rest', withLine(5, '\t\tip saddr 1.2.3.4 accept # }')],
    ['a rule that is a command', withLine(5, '\t\tflush ruleset')],
    ['a statement in the table outside a chain', withLine(4, '\tflush chain inet fleetplane input')],
    ['a comment after the first statement', withLine(3, '# late')],
    ['a carriage return', withLine(5, '\t\tip saddr 1.2.3.4 accept\r')],
    ['a table left open', full.replace(/}\n$/, '')],
    ['a script without its final line break', full.slice(0, -1)],
    ['a variable', withLine(5, '\t\tip saddr $evil accept')],
    ['a nat hook other than postrouting (prerouting could redirect traffic)', withLine(5, '\t\ttype nat hook prerouting priority dstnat; policy accept;')],
    ['a nat base chain whose policy drops', withLine(5, '\t\ttype nat hook postrouting priority srcnat; policy drop;')],
  ];
  it.each(refused)('refuses %s', (_name, script) => {
    expect(() => assertOwnTableOnly(script)).toThrow(ForeignRulesetError);
  });
});
