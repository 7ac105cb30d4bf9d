/**
 * The check before `nft -f`: the script touches the agent's own table
 * (`inet fleetplane`) and nothing else. The renderer builds it that way
 * (render-nftables.ts); this is the assertion that refuses anything else,
 * whatever produced it: no `flush ruleset`, no other table, no `include`
 * or `define`, no statement after the table's block.
 *
 * The accepted script, line by line: comments (`# ...`) and blank lines
 * first; `table inet fleetplane` and `delete table inet fleetplane`; then
 * optionally `table inet fleetplane {` with named address sets
 * (`\tset ref<N>_v4 {` … `\t}`: a type, `flags interval` and one elements
 * line) and chains (`\tchain <name> {` … `\t}`) holding one rule per line,
 * and its closing `}` as the last line.
 * A rule is one line of words, a quoted interface name, anonymous address
 * sets and references to the table's named sets (`@ref<N>_v4`), starting
 * with a word a fleetplane rule starts with; it holds no `;`, `#`, `$`,
 * other `@` or unbalanced brace, so it can't end its chain or start a
 * statement of its own. The base chains' hook lines (filter input,
 * output and forward; nat postrouting) are matched whole (they are the only
 * lines with `;`).
 */
import type { CommandRunner } from './command-runner.js';
import { DataplaneError } from './errors.js';
import { NFT_FAMILY, NFT_TABLE } from './render-nftables.js';
import { withTempFile } from './temp-file.js';

const TABLE = `${NFT_FAMILY} ${NFT_TABLE}`;
const COMMENT = /^#[\x20-\x7e]*$/;
const DECLARE = `table ${TABLE}`;
const DELETE = `delete table ${TABLE}`;
const OPEN_TABLE = `table ${TABLE} {`;
const CHAIN = /^\tchain [a-z][a-z0-9-]{0,31} \{$/;
const HOOK = /^\t\ttype (?:filter hook (?:input|output|forward) priority filter|nat hook postrouting priority srcnat); policy accept;$/;
const WORD = '[a-z0-9:][a-z0-9.:/,_-]*';
const QUOTED = '"[A-Za-z0-9_.-]{1,15}"';
const SET = '\\{ [0-9a-f.:/-]+(?:, [0-9a-f.:/-]+)* \\}';
const SET_REFERENCE = '@ref[0-9]{1,4}_v[46]';
const FIRST = '(?:iifname|oifname|ct|ip|ip6|meta|tcp|udp|accept|drop|jump)';
const RULE = new RegExp(`^\\t\\t${FIRST}(?: (?:${WORD}|${QUOTED}|${SET}|${SET_REFERENCE}))*$`);
const NAMED_SET = /^\tset ref[0-9]{1,4}_v[46] \{$/;
const SET_BODY = new RegExp(`^\\t\\t(?:type ipv4_addr|type ipv6_addr|flags interval|elements = ${SET})$`);

/** Thrown when a script would touch more than the agent's table; `nft` is never run with it. */
export class ForeignRulesetError extends DataplaneError {
  constructor(lineNumber: number, reason: string, text: string) {
    const shown = text.replace(/[^\x20-\x7e]/g, '?').slice(0, 120);
    super('firewall', `refusing an nftables script that would touch more than table ${TABLE}: line ${lineNumber} ${reason}: ${JSON.stringify(shown)}`);
  }
}

/** Throws ForeignRulesetError unless `script` is made only of statements on the agent's own table (see above). */
export function assertOwnTableOnly(script: string): void {
  if (!script.endsWith('\n')) throw new ForeignRulesetError(0, 'the script does not end with a line break', script.slice(-40));
  const lines = script.slice(0, -1).split('\n');
  type Where = 'head' | 'top' | 'table' | 'set' | 'chain' | 'closed';
  let where: Where = 'head';
  for (const [i, text] of lines.entries()) {
    const fail = (reason: string): never => {
      throw new ForeignRulesetError(i + 1, reason, text);
    };
    if (text === '') {
      if (where === 'closed') fail('follows the table');
      continue;
    }
    switch (where) {
      case 'head':
      case 'top':
        if (where === 'head' && COMMENT.test(text)) continue;
        if (text === DECLARE || text === DELETE) where = 'top';
        else if (text === OPEN_TABLE) where = 'table';
        else fail('is not a statement on the own table');
        break;
      case 'table':
        if (CHAIN.test(text)) where = 'chain';
        else if (NAMED_SET.test(text)) where = 'set';
        else if (text === '}') where = 'closed';
        else fail('is not a chain or set of the own table');
        break;
      case 'set':
        if (text === '\t}') where = 'table';
        else if (!SET_BODY.test(text)) fail('is not a line of an address set');
        break;
      case 'chain':
        if (text === '\t}') where = 'table';
        else if (!HOOK.test(text) && !RULE.test(text)) fail('is not a rule');
        break;
      case 'closed':
        fail('follows the table');
    }
  }
  if (where === 'table' || where === 'chain' || where === 'set') throw new ForeignRulesetError(lines.length, 'leaves the table open', lines.at(-1) ?? '');
}

/**
 * The one way the agent runs `nft -f`: `script` is checked first
 * (ForeignRulesetError, and `nft` doesn't run), then loaded from a private
 * temporary file in `tempDir`.
 */
export async function loadOwnTableScript(runner: CommandRunner, script: string, tempDir: string | undefined, signal?: AbortSignal): Promise<void> {
  assertOwnTableOnly(script);
  await withTempFile(script, async (file) => void (await runner.run('nft', ['-f', file], { signal })), tempDir);
}
