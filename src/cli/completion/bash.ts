import { valueFlags, type CompletionNode } from './model.js';

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** A case pattern matching the words of `path` (any spelling), and for a leaf those words followed by arguments. */
function pattern(node: CompletionNode): string {
  let variants = [''];
  for (const spellings of node.path) variants = variants.flatMap((v) => spellings.map((s) => (v === '' ? s : `${v} ${s}`)));
  if (node.path.length === 0) return "''";
  const escaped = variants.map((v) => v.replace(/ /g, '\\ '));
  return escaped.flatMap((v) => (node.leaf ? [v, `${v}\\ *`] : [v])).join('|');
}

/**
 * Bash completion: the words typed so far (flags and their values skipped)
 * select a node; its next words, or its flags after a `-`, are offered.
 * Nodes with deeper paths come first, so `ctl devices list` wins over `ctl devices`.
 */
export function bashScript(nodes: readonly CompletionNode[]): string {
  const sorted = [...nodes].sort((a, b) => b.path.length - a.path.length);
  const cases = sorted.map((n) => {
    const flags = n.flags.flatMap((f) => [`--${f.long}`, ...(f.short ? [`-${f.short}`] : [])]).join(' ');
    return `    ${pattern(n)}) words=${quote(n.words.join(' '))}; flags=${quote(flags)} ;;`;
  });
  const values = new Map<string, readonly string[]>();
  for (const n of nodes) for (const f of n.flags) if (f.values.length) values.set(`--${f.long}${f.short ? `|-${f.short}` : ''}`, f.values);
  const valueCases = [...values].map(([flag, v]) => `    ${flag}) COMPREPLY=($(compgen -W ${quote(v.join(' '))} -- "$cur")); return ;;`);
  return `# bash completion for fleetplane: source <(fleetplane completion bash)
_fleetplane() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
${valueCases.join('\n')}
    ${valueFlags(nodes).join('|')}) return ;;
  esac
  local -a typed=()
  local i w skip=
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [[ -n $skip ]]; then skip=; continue; fi
    case "$w" in
      ${valueFlags(nodes).join('|')}) skip=1 ;;
      -*) ;;
      *) typed+=("$w") ;;
    esac
  done
  local words= flags=
  case "\${typed[*]}" in
${cases.join('\n')}
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  fi
}
complete -F _fleetplane fleetplane
`;
}
