import { UsageError } from '../exit-codes.js';
import { findEntry, isGroup, type Command, type CommandGroup, type Entry } from './command-spec.js';
import { configGroup } from './config-commands.js';
import { devicesGroup } from './resources/devices.js';
import { organizationsGroup } from './resources/organizations.js';
import { registrationKeysGroup } from './resources/registration-keys.js';
import { securityGroupsGroup } from './resources/security-groups.js';
import { policyGroup } from './resources/policy.js';
import { tokensGroup } from './resources/tokens.js';
import { apiKeysGroup } from './resources/api-keys.js';
import { invitationsGroup } from './resources/invitations.js';
import { membersGroup } from './resources/members.js';
import { statusCommand } from './status.js';
import { auditCommand } from './audit.js';
import { loginCommand, logoutCommand, sessionsGroup } from './login-commands.js';
import { watchCommand } from './watch.js';

/** Everything after `fleetplane ctl`, in the order --help lists it. */
export const ENTRIES: readonly Entry[] = [
  organizationsGroup,
  devicesGroup,
  securityGroupsGroup,
  policyGroup,
  tokensGroup,
  registrationKeysGroup,
  membersGroup,
  invitationsGroup,
  apiKeysGroup,
  statusCommand,
  auditCommand,
  watchCommand,
  loginCommand,
  logoutCommand,
  sessionsGroup,
  configGroup,
];

/** Where the words of a command line lead. `path`: the canonical words, e.g. `devices list`. */
export type Resolved =
  | { type: 'root' }
  | { type: 'group'; group: CommandGroup; path: string }
  | { type: 'command'; command: Command; path: string; args: string[] };

/**
 * Resolves positionals to a command. Unknown words are usage errors; the
 * `path` of the error's `where` says how far the words led.
 */
export function resolveCommand(positionals: readonly string[]): Resolved {
  const [first, second, ...rest] = positionals;
  if (first === undefined) return { type: 'root' };
  const entry = findEntry(ENTRIES, first);
  if (!entry) throw new CommandError(`unknown command or resource ${JSON.stringify(first)}`, '');
  if (!isGroup(entry)) return { type: 'command', command: entry, path: entry.name, args: positionals.slice(1) };
  if (second === undefined) return { type: 'group', group: entry, path: entry.name };
  const command = findEntry(entry.commands, second);
  if (!command) {
    const verbs = entry.commands.map((c) => c.name).join(', ');
    throw new CommandError(`unknown verb ${JSON.stringify(second)} (one of ${verbs})`, entry.name);
  }
  return { type: 'command', command, path: `${entry.name} ${command.name}`, args: rest };
}

/** A usage error found while resolving words; `path` is the part that resolved. */
export class CommandError extends UsageError {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}
