import { ApiError, notFound } from '../errors.js';
import { orgOf, type Principal } from '../principal/index.js';
import { kindOf, type PrincipalKind } from './principal-kind.js';
import { ACCESS_RULES, REFUSALS, type AccessRule, type Entry } from './rules.js';

/** What a call names, from its path: the organization, the object id, the agent method, the user. */
export interface Target {
  org?: string | undefined;
  id?: string | undefined;
  method?: string | undefined;
  user?: string | undefined;
}

const key = (entry: Entry, method: string, route: string): string => `${entry} ${method} ${route}`;
const byKey = new Map(ACCESS_RULES.map((r) => [key(r.entry, r.method, r.route), r]));

/** The rule of an entry point; undefined when the table has none (which the server refuses to start with). */
export function ruleFor(entry: Entry, method: string, route: string): AccessRule | undefined {
  return byKey.get(key(entry, method, route));
}

/** The rule of an entry point outside the router (the tunnel, the private listener), looked up once, at load. */
export function requiredRule(entry: Entry, method: string, route: string): AccessRule {
  const rule = ruleFor(entry, method, route);
  if (!rule) throw new Error(`${entry} ${method} ${route} has no access rule (src/server/access/rules.ts)`);
  return rule;
}

/**
 * Decides whether `p` may make a call under `rule` to `target`; throws the
 * ApiError its caller gets otherwise: 404 for another organization (as if it
 * did not exist), 403 for a kind or a grant that does not cover the call.
 * `kind`: the principal's kind for this call (a user's: user-kind.ts).
 */
export function decide(rule: AccessRule, p: Principal, target: Target, kind: PrincipalKind = kindOf(p)): void {
  if (rule.allow === 'anyone') return;
  const confined = orgOf(p);
  if (rule.scope === 'org-in-path' && confined !== undefined && confined !== target.org) throw notFound('organization');
  const grant = rule.allow[kind];
  if (grant === undefined) {
    const refusal = typeof rule.refusal === 'string' ? rule.refusal : rule.refusal?.[kind];
    throw new ApiError('forbidden', refusal ?? REFUSALS[kind]);
  }
  if (grant === true) return;
  if ('noApiKey' in grant) {
    if (p.type === 'user' && p.credential === 'api_key') throw new ApiError('forbidden', grant.refusal);
    return;
  }
  if ('ownDevice' in grant) {
    if (p.type !== 'device' || p.deviceId !== target.id) throw new ApiError('forbidden', grant.refusal);
    return;
  }
  if (!grant.methods.includes(target.method ?? '')) throw new ApiError('forbidden', grant.refusal);
}
