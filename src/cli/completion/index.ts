import { EXIT } from '../exit-codes.js';
import { bashScript } from './bash.js';
import { fishScript } from './fish.js';
import { completionTree, SHELLS, type Shell } from './model.js';

export const COMPLETION_HELP = `Usage: fleetplane completion bash|zsh|fish

Prints a shell completion script for fleetplane's commands, resources, verbs and flags, and for
the values they take from a fixed set: -o's formats, ctl watch's kinds and ctl audit --kind's.

Examples:
  source <(fleetplane completion bash)                 # bash, this shell; add to ~/.bashrc to keep it
  fleetplane completion zsh > "\${fpath[1]}/_fleetplane"  # zsh (needs compinit)
  fleetplane completion fish | source                  # fish; or > ~/.config/fish/completions/fleetplane.fish
`;

/** Zsh runs the bash function through bashcompinit, so the three shells complete the same words. */
function zshScript(bash: string): string {
  return `#compdef fleetplane
# zsh completion for fleetplane: fleetplane completion zsh > "\${fpath[1]}/_fleetplane"
autoload -U +X bashcompinit && bashcompinit
${bash}`;
}

export function completionScript(shell: Shell): string {
  const nodes = completionTree();
  if (shell === 'fish') return fishScript(nodes);
  const bash = bashScript(nodes);
  return shell === 'zsh' ? zshScript(bash) : bash;
}

function isShell(s: string | undefined): s is Shell {
  return (SHELLS as readonly (string | undefined)[]).includes(s);
}

/** `fleetplane completion <shell>`: the script on stdout; exit 2 for a missing or unknown shell. */
export function runCompletion(argv: readonly string[], out: { write(s: string): unknown }, err: { write(s: string): unknown }): number {
  if (argv.includes('--help') || argv.includes('-h')) {
    out.write(COMPLETION_HELP);
    return EXIT.ok;
  }
  const [shell, extra] = argv;
  if (!isShell(shell) || extra !== undefined) {
    const why = shell === undefined ? 'missing shell' : extra !== undefined ? `unexpected argument ${JSON.stringify(extra)}` : `unknown shell ${JSON.stringify(shell)}`;
    err.write(`fleetplane completion: ${why}: use bash, zsh or fish (see --help)\n`);
    return EXIT.usage;
  }
  out.write(completionScript(shell));
  return EXIT.ok;
}
