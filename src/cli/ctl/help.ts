import { flagName, isGroup, type Command, type CommandGroup, type FlagUse } from './command-spec.js';
import { ENTRIES } from './commands.js';
import { CONNECTION_FLAGS, FLAGS, type FlagName, type FlagSpec } from './flags.js';

const EXIT_CODES = 'Exit codes: 0 success; 1 runtime failure (server, network, a name matching nothing or several objects); 2 usage error.';

function flagLine(use: FlagUse): [string, string] {
  const name: FlagName = flagName(use);
  const spec: FlagSpec = FLAGS[name];
  const short = spec.short === undefined ? '    ' : `-${spec.short}, `;
  const placeholder = typeof use === 'string' ? spec.value : (use.value ?? spec.value);
  const value = placeholder === undefined ? '' : ` ${placeholder}`;
  const repeat = spec.kind === 'list' ? ' (repeatable)' : '';
  return [`${short}--${name}${value}`, `${typeof use === 'string' ? spec.help : use.help}${repeat}`];
}

function flagSection(title: string, uses: readonly FlagUse[]): string {
  const lines = uses.map(flagLine);
  const width = Math.max(...lines.map(([l]) => l.length));
  return `${title}:\n${lines.map(([l, h]) => `  ${l.padEnd(width)}  ${h}`).join('\n')}`;
}

function examples(list: readonly string[]): string {
  return `Examples:\n${list.map((e) => `  ${e}`).join('\n')}`;
}

/** `fleetplane ctl devices list --help`. */
export function commandHelp(command: Command, path: string): string {
  const usage = `Usage: fleetplane ctl ${path}${command.args ? ` ${command.args}` : ''} [flags]`;
  const aliases = command.aliases?.length ? `\nAlso: ${command.aliases.join(', ')}.` : '';
  const sections = [`${usage}\n\n${command.summary[0]?.toUpperCase() ?? ''}${command.summary.slice(1)}.${aliases}`];
  if (command.details) sections.push(command.details);
  sections.push(flagSection('Flags', [...command.flags, 'help']));
  if (command.kind === 'remote') sections.push(flagSection('Connection flags (flags beat the environment, which beats the context)', CONNECTION_FLAGS));
  sections.push(examples(command.examples));
  return `${sections.join('\n\n')}\n`;
}

function verbTable(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => `${c.name} ${c.args ?? ''}`.length));
  return commands.map((c) => `  ${`${c.name} ${c.args ?? ''}`.padEnd(width)}  ${c.summary}`).join('\n');
}

/** `fleetplane ctl devices --help`. */
export function groupHelp(group: CommandGroup): string {
  const aliases = group.aliases.length ? ` (also: ${group.aliases.join(', ')})` : '';
  return [
    `Usage: fleetplane ctl ${group.name} <verb> [args] [flags]`,
    `${group.summary[0]?.toUpperCase() ?? ''}${group.summary.slice(1)}.`,
    `Verbs${aliases}:\n${verbTable(group.commands)}`,
    examples(group.commands.flatMap((c) => c.examples.slice(0, 1))),
    `Run 'fleetplane ctl ${group.name} <verb> --help' for a verb's flags.`,
  ].join('\n\n') + '\n';
}

/** `fleetplane ctl --help`. */
export function rootHelp(): string {
  const names = ENTRIES.map((e) => (isGroup(e) && e.aliases.length ? `${e.name} (${e.aliases.join(', ')})` : e.name));
  const width = Math.max(...names.map((n) => n.length));
  const lines = ENTRIES.map((e, i) => `  ${(names[i] ?? '').padEnd(width)}  ${isGroup(e) ? e.commands.map((c) => c.name).join(' | ') : e.summary}`);
  return [
    'Usage: fleetplane ctl <resource> <verb> [args] [flags]\n       fleetplane ctl status | watch <kind>... | config <verb>',
    'Operate a fleetplane control plane from the command line.',
    `Resources and commands:\n${lines.join('\n')}`,
    [
      'Names work wherever an id does: --org takes an organization name, devices answer to their hostname',
      '(or tunnel IP), security groups, tokens and registration keys to their description. A name that',
      'several objects have is an error listing their ids.',
    ].join('\n'),
    flagSection('Connection flags (flags beat FLEETPLANE_URL/FLEETPLANE_TOKEN, which beat the current context)', [...CONNECTION_FLAGS, 'org']),
    flagSection('Common flags', ['output', 'help', 'version']),
    examples([
      'fleetplane ctl config set-context prod --server https://fleet.example.com --token "$TOKEN" --org acme',
      'fleetplane ctl devices list',
      'fleetplane ctl devices get web-1 -o yaml',
      'fleetplane ctl status --watch',
      'fleetplane ctl watch devices',
    ]),
    `Run 'fleetplane ctl <resource> --help' or 'fleetplane ctl <resource> <verb> --help' for more.\n${EXIT_CODES}`,
  ].join('\n\n') + '\n';
}
