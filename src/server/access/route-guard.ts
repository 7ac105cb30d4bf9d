import type { FastifyRequest, RouteOptions } from 'fastify';
import type { Access } from './access.js';
import { ruleFor } from './decide.js';
import type { AccessRule } from './rules.js';

/**
 * An `onRoute` hook: gives every route the guard of its rule (rules.ts) as
 * its first `onRequest` hook, so a caller is authenticated and authorized
 * before its body is read or validated. A route the table has no rule for
 * fails its registration (and the server's start). HEAD follows GET.
 */
export function guardRoutes(access: Access): (route: RouteOptions) => void {
  return (route) => {
    if (Array.isArray(route.method)) throw new Error(`${route.method.join(',')} ${route.url}: one method per route, for one access rule each`);
    const method = route.method === 'HEAD' ? 'GET' : route.method;
    const rule: AccessRule | undefined = ruleFor('rest', method, route.url) ?? ruleFor('watch', method, route.url);
    if (!rule) throw new Error(`${route.method} ${route.url} has no access rule (src/server/access/rules.ts)`);
    if (rule.allow === 'anyone') return;
    const existing = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    // Fastify derives a GET's HEAD route from the options as registered, before this hook ran: it gets its own guard here.
    route.onRequest = [(req: FastifyRequest) => access.authorizeRequest(req, rule), ...existing];
  };
}
