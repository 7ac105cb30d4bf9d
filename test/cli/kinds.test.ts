/**
 * One spelling of kinds in the CLI (the watch kinds': `security-group`),
 * every other accepted: plural, underscores, the resources' short names.
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/exit-codes.js';
import { auditKind, CLI_KINDS, kindNamed, watchKinds } from '../../src/cli/ctl/kinds.js';
import { isGroup, type CommandGroup } from '../../src/cli/ctl/command-spec.js';
import { ENTRIES } from '../../src/cli/ctl/commands.js';
import { AUDIT_KINDS, WATCH_KINDS } from '../../src/protocol/index.js';

describe('kindNamed', () => {
  it.each(['security-group', 'security-groups', 'security_group', 'security_groups', 'sg', 'sgs'])('reads %s as security-group', (name) => {
    expect(kindNamed(name)).toBe('security-group');
  });

  it.each([
    ['device', 'device'],
    ['devices', 'device'],
    ['dev', 'device'],
    ['org', 'organization'],
    ['orgs', 'organization'],
    ['organizations', 'organization'],
    ['registration-keys', 'registration-key'],
    ['registration_key', 'registration-key'],
    ['keys', 'registration-key'],
    ['api_keys', 'api-key'],
    ['device-tokens', 'device-token'],
    ['invites', 'invitation'],
    ['routes', 'route'],
  ])('reads %s as %s', (name, kind) => {
    expect(kindNamed(name)).toBe(kind);
  });

  it('spells every kind of the audit log, and every watch kind, with dashes', () => {
    expect(CLI_KINDS).toHaveLength(AUDIT_KINDS.length);
    expect(CLI_KINDS.every((k) => !k.includes('_'))).toBe(true);
    for (const k of WATCH_KINDS) expect(kindNamed(k)).toBe(k);
  });

  it('reads every name and alias of a kind\'s command group as that kind: the groups\' aliases are the one table', () => {
    const groups = ENTRIES.filter(isGroup);
    const ofKind = (kind: string): CommandGroup | undefined => groups.find((g) => kindNamed(g.name) === kind);
    const covered = CLI_KINDS.filter((kind) => ofKind(kind) !== undefined);
    expect(covered).toEqual(['organization', 'device', 'security-group', 'token', 'registration-key', 'member', 'invitation', 'api-key', 'session']);
    for (const kind of covered) {
      for (const name of [ofKind(kind)!.name, ...ofKind(kind)!.aliases]) expect({ name, kind: kindNamed(name) }).toEqual({ name, kind });
    }
    // An alias added to a group is a kind's spelling at once.
    const sg = groups.find((g) => g.name === 'security-groups')!;
    expect(sg.aliases).toContain('sg');
    expect(kindNamed('invite')).toBe('invitation');
  });

  it('reads nothing else', () => {
    for (const name of ['planets', 'security', 'group', 'Device', 'sgss', 'security-groupss', '']) expect(kindNamed(name)).toBeUndefined();
  });
});

describe('auditKind (ctl audit --kind)', () => {
  it.each(['security-group', 'security-groups', 'security_group', 'security_groups', 'sg', 'sgs'])('sends %s as the stored security_group', (name) => {
    expect(auditKind('kind', name)).toBe('security_group');
  });

  it('sends each kind as the audit log stores it', () => {
    for (const stored of AUDIT_KINDS) expect(auditKind('kind', stored.replaceAll('_', '-'))).toBe(stored);
    expect(auditKind('kind', 'keys')).toBe('registration_key');
  });

  it('refuses an unknown kind as a usage error naming the flag and listing the kinds', () => {
    expect(() => auditKind('kind', 'planets')).toThrow(UsageError);
    expect(() => auditKind('kind', 'planets')).toThrow(
      '--kind: unknown kind "planets": use organization, device, security-group, token, registration-key, device-token, member, invitation, api-key, session, user, route (plurals, underscores and short names such as sg work too)',
    );
  });
});

describe('watchKinds (ctl watch KIND...)', () => {
  it('takes every spelling, each kind once, in the order given', () => {
    expect(watchKinds(['security_groups', 'devices', 'sg', 'security-group'])).toEqual(['security-group', 'device']);
    expect(watchKinds(['sgs'])).toEqual(['security-group']);
    expect(watchKinds(['org', 'dev'])).toEqual(['organization', 'device']);
    expect(watchKinds(['all', 'devices'])).toEqual([...WATCH_KINDS]);
  });

  it('refuses none, an unknown kind, and a kind with no watch, as usage errors listing the kinds', () => {
    expect(() => watchKinds([])).toThrow(new UsageError('watch needs at least one kind: device, security-group, organization or all'));
    expect(() => watchKinds(['devices', 'planets'])).toThrow(new UsageError('unknown kind "planets": use device, security-group, organization or all'));
    expect(() => watchKinds(['tokens'])).toThrow(new UsageError("token changes can't be watched: use device, security-group, organization or all"));
  });
});
