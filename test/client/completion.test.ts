import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { completionScript, runCompletion } from '../../src/cli/completion/index.js';
import { TextBuffer } from './support/ctl-runner.js';
import { scratchDir } from '../support/scratch-dir.js';

const has = (bin: string): boolean => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

/** What bash offers for the command line `line` (the cursor at its end), using the generated script. */
function bashComplete(script: string, line: string): string[] {
  const dir = scratchDir('fp-completion');
  const file = join(dir, 'fleetplane.bash');
  writeFileSync(file, script);
  const words = line.split(' ');
  const program = [
    `source ${JSON.stringify(file)}`,
    `COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    '_fleetplane',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const res = spawnSync('bash', ['--norc', '--noprofile', '-c', program], { encoding: 'utf8' });
  expect(res.stderr).toBe('');
  return res.stdout.split('\n').filter((w) => w !== '');
}

describe('fleetplane completion', () => {
  it.skipIf(!has('bash'))('bash completes commands, resources (any alias), verbs, flags and flag values', () => {
    const script = completionScript('bash');
    const cases: Array<[string, string[]]> = [
      ['fleetplane ', ['serve', 'agent', 'ctl', 'sync', 'completion']],
      ['fleetplane completion ', ['bash', 'zsh', 'fish']],
      ['fleetplane ctl d', ['devices']],
      ['fleetplane ctl devices ', ['list', 'get', 'create', 'update', 'delete', 'approve-routes', 'expire', 'rpc']],
      ['fleetplane ctl device l', ['list']],
      ['fleetplane ctl sg c', ['create']],
      ['fleetplane ctl devices list --o', ['--org', '--output']],
      ['fleetplane ctl --org acme devices list --w', ['--watch']],
      ['fleetplane ctl devices list -o ', ['table', 'wide', 'json', 'yaml']],
      ['fleetplane ctl devices update web-1 --if', ['--if-match']],
      ['fleetplane ctl devices approve-routes router-1 --a', ['--all']],
      ['fleetplane ctl sg create --al', ['--allow']],
      ['fleetplane ctl watch ', ['device', 'security-group', 'organization', 'all']],
      ['fleetplane ctl watch device s', ['security-group']],
      ['fleetplane ctl watch --org acme o', ['organization']],
      ['fleetplane ctl audit --kind ', ['organization', 'device', 'security-group', 'token', 'registration-key', 'device-token', 'member', 'invitation', 'api-key', 'session', 'user', 'route']],
      ['fleetplane ctl audit --org acme --kind reg', ['registration-key']],
      ['fleetplane ctl audit --kind device --li', ['--limit']],
      ['fleetplane ctl devices get web-1 --o', ['--org', '--output']],
      ['fleetplane ctl devicesx ', []],
      ['fleetplane ctl config ', ['set-context', 'use-context', 'get-contexts', 'current-context', 'delete-context']],
      ['fleetplane ctl config set-context prod --ca', ['--ca-file']],
      ['fleetplane serve --data-', ['--data-dir']],
      ['fleetplane agent --state', ['--state-dir']],
      ['fleetplane ctl policy ', ['get', 'apply', 'diff', 'test', 'adopt', 'release']],
      ['fleetplane ctl policy apply --dr', ['--dry-run']],
      ['fleetplane sync --fr', ['--from']],
    ];
    for (const [line, expected] of cases) expect({ line, offered: bashComplete(script, line) }).toEqual({ line, offered: expected });
  });

  it('zsh runs the bash completion through bashcompinit; fish gets complete lines', () => {
    const zsh = completionScript('zsh');
    expect(zsh.startsWith('#compdef fleetplane\n')).toBe(true);
    expect(zsh).toContain('bashcompinit');
    expect(zsh).toContain('complete -F _fleetplane fleetplane');
    const fish = completionScript('fish');
    expect(fish).toContain("complete -c fleetplane -n '__fish_use_subcommand' -a 'serve agent ctl sync completion'");
    expect(fish).toContain(
      "complete -c fleetplane -n '__fish_seen_subcommand_from ctl; and __fish_seen_subcommand_from devices device dev; and not __fish_seen_subcommand_from list get create update delete approve-routes expire rpc' -a 'list get create update delete approve-routes expire rpc'",
    );
    expect(fish).toMatch(/__fish_seen_subcommand_from list' -l output -s o -x -a 'table wide json yaml' -d /);
    expect(fish).toMatch(/__fish_seen_subcommand_from audit' -l kind -x -a 'organization device security-group token registration-key device-token member invitation api-key session user route' -d /);
  });

  it.skipIf(!has('zsh'))('the zsh script parses', () => {
    expect(spawnSync('zsh', ['-n'], { input: completionScript('zsh') }).status).toBe(0);
  });

  it.skipIf(!has('fish'))('the fish script parses', () => {
    expect(spawnSync('fish', ['--no-execute'], { input: completionScript('fish') }).status).toBe(0);
  });

  it('help, and exit 2 for a missing or unknown shell', () => {
    const out = new TextBuffer();
    const err = new TextBuffer();
    expect(runCompletion(['--help'], out, err)).toBe(0);
    expect(out.text).toMatch(/^Usage: fleetplane completion bash\|zsh\|fish\n[\s\S]*Examples:/);
    expect(runCompletion([], out, err)).toBe(2);
    expect(runCompletion(['tcsh'], out, err)).toBe(2);
    expect(err.text).toBe(
      'fleetplane completion: missing shell: use bash, zsh or fish (see --help)\nfleetplane completion: unknown shell "tcsh": use bash, zsh or fish (see --help)\n',
    );
  });
});
