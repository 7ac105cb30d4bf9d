import type { CompletionNode } from './model.js';

const quote = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** A fish condition: every word of the path seen; for a node with next words, none of them yet. */
function condition(n: CompletionNode): string {
  if (n.path.length === 0) return '__fish_use_subcommand';
  const seen = n.path.map((spellings) => `__fish_seen_subcommand_from ${spellings.join(' ')}`);
  const notYet = n.words.length ? [`not __fish_seen_subcommand_from ${n.words.join(' ')}`] : [];
  return [...seen, ...notYet].join('; and ');
}

/** Fish completion: one `complete` line per word and per flag, conditioned on the words typed. */
export function fishScript(nodes: readonly CompletionNode[]): string {
  const lines = ['# fish completion for fleetplane: fleetplane completion fish | source', 'complete -c fleetplane -f'];
  for (const n of nodes) {
    const when = quote(condition(n));
    if (n.words.length) lines.push(`complete -c fleetplane -n ${when} -a ${quote(n.words.join(' '))}`);
    for (const f of n.flags) {
      const short = f.short ? ` -s ${f.short}` : '';
      const value = f.values.length ? ` -x -a ${quote(f.values.join(' '))}` : f.takesValue ? ' -r' : '';
      lines.push(`complete -c fleetplane -n ${when} -l ${f.long}${short}${value} -d ${quote(f.help.slice(0, 80))}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
