import type { FastifyError, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Access } from '../access/index.js';
import { actorOf, SYSTEM_ACTOR } from '../principal/index.js';
import { ruleFor } from '../access/decide.js';
import { ROUTES } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/index.js';
import { boundedUserAgent, DeniedLimiter, runAudited, type AuditScope } from '../audit/index.js';

/** Methods whose routes write: their handlers run in an audit scope, and their 401s and 403s are recorded. */
export const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Write routes of observed state only (a device's status): never audited, so their handlers are left as they are. */
const OBSERVED_STATE: ReadonlySet<string> = new Set([`PUT ${ROUTES.deviceStatus}`]);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface AuditRoutesOptions {
  access: Access;
  store: Pick<Store, 'audit'>;
  metrics: Metrics;
  logger: Logger;
  limiter?: DeniedLimiter;
}

/**
 * The audit scope of a REST request: its principal (as the route's guard
 * resolved it), address and user agent. On a route open to anyone
 * (`credentialed` false) no credential names the actor: a write there must
 * give its own (`AuditRecord.actor`), else it fails.
 */
export function scopeOfRequest(access: Access, req: FastifyRequest, credentialed = true): AuditScope {
  return {
    actor: credentialed
      ? async () => actorOf(await access.principalOf(req))
      : () => Promise.reject(new Error(`audit: ${req.method} ${req.routeOptions.url ?? req.url} takes no credential; a write there must name its actor`)),
    source: req.ip,
    userAgent: boundedUserAgent(req.headers['user-agent']),
  };
}

/**
 * An `onRoute` hook: every REST route's handler runs in its request's audit
 * scope, so each write it makes records its actor, address and user agent
 * (audit/record.ts); and a write route's 401 or 403 is counted in
 * `fleetplane_http_refusals_total{reason}` and, when its credential
 * resolved, recorded as a `denied` entry within the limiter's bounds (what
 * it drops is counted in `fleetplane_audit_denied_dropped_total`, and summed
 * up in one entry per organization when its window closes). A refusal
 * without a valid credential is never recorded: anyone who knows an
 * organization's id could otherwise write into its log.
 */
export function auditRoutes(o: AuditRoutesOptions): (route: RouteOptions) => void {
  const limiter = o.limiter ?? new DeniedLimiter();
  let flush: NodeJS.Timeout | undefined;
  const writeSummaries = async (): Promise<void> => {
    for (const s of limiter.closed()) {
      await o.store.audit.recordDenied(SYSTEM_ACTOR, { source: null, userAgent: null }, {
        orgId: s.orgId,
        action: 'denied',
        kind: 'route',
        objectId: null,
        details: { dropped: s.dropped, since: new Date(s.since).toISOString(), until: new Date(s.until).toISOString() },
      });
    }
  };
  // One timer at most, at the earliest window that dropped something; unref'd: it never holds a stopping server up.
  const scheduleFlush = (): void => {
    const at = limiter.nextClose();
    if (flush !== undefined || at === undefined) return;
    flush = setTimeout(() => {
      flush = undefined;
      writeSummaries()
        .catch((err: unknown) => o.logger.error({ err }, 'recording the summary of unrecorded refusals failed'))
        .finally(scheduleFlush);
    }, Math.max(0, at - Date.now()));
    flush.unref();
  };
  const recordDenied = async (req: FastifyRequest, route: string, err: ApiError): Promise<void> => {
    // A credential that does not resolve is this refusal's very reason (the 401 answered), not an error of its own.
    const principal = await o.access.principalOf(req).then(
      (p) => p,
      () => undefined,
    );
    if (principal === undefined) {
      o.metrics.httpRefusals.inc({ reason: o.access.presentsCredential(req) ? 'bad_credential' : 'no_credential' });
      return;
    }
    o.metrics.httpRefusals.inc({ reason: 'not_allowed' });
    const param = (req.params as Partial<Record<string, string>> | undefined)?.['org'];
    const org = param !== undefined && UUID.test(param) ? param : undefined;
    const verdict = limiter.take(req.ip, org);
    if (verdict !== 'record') {
      o.metrics.auditDeniedDropped.inc({ limit: verdict });
      if (org !== undefined) scheduleFlush();
      return;
    }
    await o.store.audit.recordDenied(actorOf(principal), { source: req.ip, userAgent: boundedUserAgent(req.headers['user-agent']) }, {
      orgId: org ?? null,
      action: 'denied',
      kind: 'route',
      objectId: `${req.method} ${route}`,
      details: { status: err.status, code: err.code, path: req.url.slice(0, 256) },
    });
  };
  const withDenied = (route: RouteOptions) => {
    const onError = async (req: FastifyRequest, _reply: FastifyReply, err: FastifyError): Promise<void> => {
      if (!(err instanceof ApiError) || (err.status !== 401 && err.status !== 403)) return;
      // The refusal is answered whatever happens here: a failed record is logged, never the caller's error.
      await recordDenied(req, route.url, err).catch((e: unknown) => o.logger.error({ err: e, route: route.url }, 'recording a refused write failed'));
    };
    const existing = route.onError === undefined ? [] : Array.isArray(route.onError) ? route.onError : [route.onError];
    return [...existing, onError];
  };
  return (route) => {
    const method = Array.isArray(route.method) ? undefined : route.method === 'HEAD' ? 'GET' : route.method;
    // Watch streams and the tunnel never write desired state: their path stays as it is.
    const rule = method === undefined ? undefined : ruleFor('rest', method, route.url);
    if (method === undefined || rule === undefined) return;
    const credentialed = rule.allow !== 'anyone';
    const handler = route.handler;
    if (OBSERVED_STATE.has(`${method} ${route.url}`)) {
      // No scope: a status write that recorded an entry would fail loudly instead of slowing the status path.
      if (WRITE_METHODS.has(method)) route.onError = withDenied(route);
      return;
    }
    // Every REST handler, reads too: a GET that writes (a login callback) has its scope as well.
    route.handler = function auditedHandler(this: unknown, req: FastifyRequest, reply: FastifyReply) {
      return runAudited(scopeOfRequest(o.access, req, credentialed), () => handler.call(this as never, req, reply));
    };
    if (!WRITE_METHODS.has(method)) return;
    route.onError = withDenied(route);
  };
}
