import { MEMBER_ROLES, type MemberRole } from '../../../protocol/wire.js';
import { UsageError } from '../../exit-codes.js';
import type { CtlContext } from '../context.js';
import { requireArg } from '../flag-values.js';

function isMemberRole(v: string): v is MemberRole {
  return (MEMBER_ROLES as readonly string[]).includes(v);
}

/** `--role`, required: one of the member roles. */
export function roleFlag(ctx: CtlContext): MemberRole {
  const role = requireArg(ctx.flags.string('role'), `--role (${MEMBER_ROLES.join(', ')})`);
  if (!isMemberRole(role)) throw new UsageError(`--role must be one of ${MEMBER_ROLES.join(', ')}`);
  return role;
}

/** The help of `--role` where it names a member role. */
export const roleHelp = { name: 'role', help: 'owner, admin or read; required' } as const;
