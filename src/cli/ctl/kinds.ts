import { AUDIT_KINDS, WATCH_KINDS, isWatchKind, type AuditKind, type WatchKind } from '../../protocol/wire.js';
import { UsageError } from '../exit-codes.js';
import type { CommandGroup } from './command-spec.js';
import { sessionsGroup } from './login-commands.js';
import { apiKeysGroup } from './resources/api-keys.js';
import { devicesGroup } from './resources/devices.js';
import { invitationsGroup } from './resources/invitations.js';
import { membersGroup } from './resources/members.js';
import { organizationsGroup } from './resources/organizations.js';
import { registrationKeysGroup } from './resources/registration-keys.js';
import { securityGroupsGroup } from './resources/security-groups.js';
import { tokensGroup } from './resources/tokens.js';

/** `security_group` → `security-group`. */
type Dashed<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}-${Dashed<Tail>}` : S;

/**
 * A kind of object as the CLI spells it: the watch kinds' spelling
 * (singular, words joined by dashes: `security-group`), for every kind the
 * audit log records. The audit log stores the same kinds with underscores.
 */
export type CliKind = Dashed<AuditKind>;

const dashed = <S extends string>(kind: S): Dashed<S> => kind.replaceAll('_', '-') as Dashed<S>;

/** Every kind, in the CLI's spelling, in the audit log's order. */
export const CLI_KINDS: readonly CliKind[] = AUDIT_KINDS.map(dashed);

/**
 * The command group of each kind that has one. Its name and aliases (the
 * one table of short names: `ctl sg list`, `ctl keys list`) spell the kind
 * too, so `ctl watch sgs` and `ctl audit --kind keys` read as the commands do.
 */
const GROUPS: Partial<Record<CliKind, CommandGroup>> = {
  organization: organizationsGroup,
  device: devicesGroup,
  'security-group': securityGroupsGroup,
  token: tokensGroup,
  'registration-key': registrationKeysGroup,
  member: membersGroup,
  invitation: invitationsGroup,
  'api-key': apiKeysGroup,
  session: sessionsGroup,
};

/** A name and its plural: `dev`, `devs`; a name ending in s is plural already (`sgs`, `keys`). */
const withPlural = (name: string): string[] => (name.endsWith('s') ? [name] : [name, `${name}s`]);

/**
 * Every spelling a kind answers to, to the kind: its own, its plural, its
 * command group's name and aliases with their plurals, and each of those
 * with underscores for dashes (`security_groups`, the audit log's
 * `security_group`). `ctl watch` and `ctl audit --kind` read it.
 */
const SPELLINGS: ReadonlyMap<string, CliKind> = new Map(
  CLI_KINDS.flatMap((kind) => {
    const group = GROUPS[kind];
    const names = [kind, ...(group ? [group.name, ...group.aliases] : [])];
    return names.flatMap(withPlural).flatMap((name) => [name, name.replaceAll('-', '_')]).map((name) => [name, kind] as const);
  }),
);

/** The kind `name` spells, or undefined for none. */
export function kindNamed(name: string): CliKind | undefined {
  return SPELLINGS.get(name);
}

/** `ctl audit --kind`: the audit log's kind (`security_group`) that `name` spells; a UsageError listing the kinds otherwise. */
export function auditKind(flag: string, name: string): AuditKind {
  const kind = kindNamed(name);
  const stored = AUDIT_KINDS.find((k) => dashed(k) === kind);
  if (stored === undefined) {
    throw new UsageError(`--${flag}: unknown kind ${JSON.stringify(name)}: use ${CLI_KINDS.join(', ')} (plurals, underscores and short names such as sg work too)`);
  }
  return stored;
}

/** How ctl shows a kind the audit log stores (`security_group` → `security-group`), as `ctl watch` shows kinds. */
export function cliKind(kind: AuditKind): CliKind {
  return dashed(kind);
}

/** `ctl watch <kind>...`: the watch kinds the names spell, `all` for every one, each once; a UsageError listing them otherwise. */
export function watchKinds(names: readonly string[]): WatchKind[] {
  const choices = `${WATCH_KINDS.join(', ')} or all`;
  if (names.length === 0) throw new UsageError(`watch needs at least one kind: ${choices}`);
  const kinds = new Set<WatchKind>();
  for (const name of names) {
    if (name === 'all') {
      for (const k of WATCH_KINDS) kinds.add(k);
      continue;
    }
    const kind = kindNamed(name);
    if (kind !== undefined && isWatchKind(kind)) kinds.add(kind);
    else throw new UsageError(kind === undefined ? `unknown kind ${JSON.stringify(name)}: use ${choices}` : `${kind} changes can't be watched: use ${choices}`);
  }
  return [...kinds];
}
