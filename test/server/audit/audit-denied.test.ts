/**
 * Issue 13: refused writes (401, 403) are recorded, rate-limited per source
 * address and over all; what is dropped is counted (docs/protocol.md "Audit log").
 * Issue 36, part 4c: a refusal without a valid credential is never recorded
 * (anyone who knows an organization's id could fill its log), only counted;
 * and one organization's log takes at most 20 refusals per minute per
 * replica, the rest summed up in one entry when the window closes.
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { HEADERS, ROUTES, paths } from '../../../src/protocol/index.js';
import { DeniedLimiter } from '../../../src/server/audit/index.js';
import { guardRoutes } from '../../../src/server/access/index.js';
import { auditRoutes } from '../../../src/server/http/audit-routes.js';
import { errorHandler } from '../../../src/server/http/error-handler.js';
import type { Metrics } from '../../../src/server/metrics.js';
import { useServer } from '../fixtures.js';
import { auditRows } from './audit-support.js';

async function counter(metrics: Metrics, name: 'httpRefusals' | 'auditDeniedDropped', label: string, value: string): Promise<number> {
  return (await metrics[name].get()).values.find((v) => v.labels[label as never] === value)?.value ?? 0;
}

/** Polls `check` until it holds or `ms` passed (a wait limit, not a measurement). */
async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('refused writes in the audit log', () => {
  const h = useServer('pglite');

  const post = (org: string, token: string | undefined, remoteAddress: string) =>
    h().server.app.inject({
      method: 'POST',
      url: paths.securityGroups(org),
      remoteAddress,
      headers: { ...(token === undefined ? {} : { [HEADERS.authorization]: `Bearer ${token}` }), [HEADERS.contentType]: 'application/json', 'user-agent': 'prober' },
      payload: '{}',
    });

  it('records the route, the status and the actor of a resolved credential; reads are not recorded', async () => {
    const s = h();
    const org = await s.createOrg();
    const read = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
    expect((await post(org.id, read.token, '10.1.0.1')).statusCode).toBe(403);
    expect((await s.call('GET', paths.tokens(org.id), { token: read.token })).statusCode).toBe(403);
    const denied = (await auditRows(s, org.id)).filter((r) => r.action === 'denied');
    expect(denied).toEqual([
      expect.objectContaining({
        kind: 'route',
        object_id: 'POST /api/organizations/:org/security_groups',
        actor_type: 'token',
        actor_id: read.id,
        source: '10.1.0.1',
        user_agent: 'prober',
        details: expect.objectContaining({ status: 403, code: 'forbidden' }),
      }),
    ]);
  });

  it('never records a refusal without a valid credential, in any log: it counts it by reason', async () => {
    const s = h();
    const org = await s.createOrg();
    const metrics = s.server.ctx.metrics;
    const bad = await counter(metrics, 'httpRefusals', 'reason', 'bad_credential');
    const none = await counter(metrics, 'httpRefusals', 'reason', 'no_credential');
    const allowed = await counter(metrics, 'httpRefusals', 'reason', 'not_allowed');
    const before = (await auditRows(s)).length;
    for (let i = 0; i < 5; i++) expect((await post(org.id, 'fp_nonsense', `10.3.0.${i}`)).statusCode).toBe(401);
    for (let i = 0; i < 3; i++) expect((await post(org.id, undefined, `10.3.1.${i}`)).statusCode).toBe(401);
    expect((await s.call('POST', paths.organizations(), { token: 'fp_nonsense', body: { name: 'x' } })).statusCode).toBe(401);
    expect((await auditRows(s)).length).toBe(before);
    expect((await auditRows(s)).filter((r) => r.actor_type === 'anonymous')).toEqual([]);
    expect((await counter(metrics, 'httpRefusals', 'reason', 'bad_credential')) - bad).toBe(6);
    expect((await counter(metrics, 'httpRefusals', 'reason', 'no_credential')) - none).toBe(3);
    expect((await counter(metrics, 'httpRefusals', 'reason', 'not_allowed')) - allowed).toBe(0);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/fleetplane_http_refusals_total\{reason="bad_credential"\} \d+/);
  });

  it('records at most 10 per source address per minute and counts the rest as dropped', async () => {
    const s = h();
    const org = await s.createOrg();
    const read = await s.ok<{ token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
    const before = await counter(s.server.ctx.metrics, 'auditDeniedDropped', 'limit', 'source');
    for (let i = 0; i < 15; i++) expect((await post(org.id, read.token, '10.2.0.1')).statusCode).toBe(403);
    const recorded = (await auditRows(s, org.id)).filter((r) => r.action === 'denied' && r.source === '10.2.0.1');
    expect(recorded.length).toBe(10);
    expect((await counter(s.server.ctx.metrics, 'auditDeniedDropped', 'limit', 'source')) - before).toBe(5);
    // Another address is recorded still.
    await post(org.id, read.token, '10.2.0.2');
    expect((await auditRows(s, org.id)).filter((r) => r.source === '10.2.0.2').length).toBe(1);
    const text = await s.server.ctx.metrics.registry.metrics();
    expect(text).toMatch(/fleetplane_audit_denied_dropped_total\{limit="source"\} \d+/);
  });

  it('records at most 20 per organization per minute, from any number of addresses', async () => {
    const s = h();
    const org = await s.createOrg();
    const other = await s.createOrg();
    const read = await s.ok<{ token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
    const otherRead = await s.ok<{ token: string }>(201, 'POST', paths.tokens(other.id), { body: { role: 'read' } });
    const before = await counter(s.server.ctx.metrics, 'auditDeniedDropped', 'limit', 'organization');
    for (let i = 0; i < 30; i++) expect((await post(org.id, read.token, `10.4.${i}.1`)).statusCode).toBe(403);
    expect((await auditRows(s, org.id)).filter((r) => r.action === 'denied').length).toBe(20);
    expect((await counter(s.server.ctx.metrics, 'auditDeniedDropped', 'limit', 'organization')) - before).toBe(10);
    // Another organization's log is bounded on its own.
    expect((await post(other.id, otherRead.token, '10.4.200.1')).statusCode).toBe(403);
    expect((await auditRows(s, other.id)).filter((r) => r.action === 'denied').length).toBe(1);
  });

  it("sums up what an organization's window dropped in one entry when the window closes", async () => {
    const s = h();
    const org = await s.createOrg();
    const read = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
    const { ctx } = s.server;
    // The route hooks of the server, on an app of their own with a short window (the server's is a minute).
    const app = Fastify();
    app.setErrorHandler(errorHandler);
    app.addHook('onRoute', guardRoutes(ctx.access));
    const limiter = new DeniedLimiter({ perOrganization: 3, windowMs: 300 });
    app.addHook('onRoute', auditRoutes({ access: ctx.access, store: ctx.store, metrics: ctx.metrics, logger: ctx.logger, limiter }));
    app.post(ROUTES.securityGroups, async () => ({}));
    await app.ready();
    try {
      for (let i = 0; i < 8; i++) {
        const res = await app.inject({ method: 'POST', url: paths.securityGroups(org.id), remoteAddress: `10.5.${i}.1`, headers: { [HEADERS.authorization]: `Bearer ${read.token}` } });
        expect(res.statusCode).toBe(403);
      }
      const summary = async () => (await auditRows(s, org.id)).filter((r) => r.action === 'denied' && r.actor_type === 'system');
      await until(async () => (await summary()).length > 0, 10_000);
      expect(await summary()).toEqual([
        expect.objectContaining({ kind: 'route', object_id: null, actor_id: null, source: null, details: expect.objectContaining({ dropped: 5 }) }),
      ]);
      expect((await auditRows(s, org.id)).filter((r) => r.action === 'denied' && r.actor_type === 'token').length).toBe(3);
    } finally {
      await app.close();
    }
  });
});

describe('DeniedLimiter', () => {
  it('caps every source, all sources together, and the sources it remembers', () => {
    let now = 0;
    const limiter = new DeniedLimiter({ perSource: 2, global: 5, windowMs: 1000, maxSources: 3 }, () => now);
    expect(['a', 'a', 'a'].map((s) => limiter.take(s))).toEqual(['record', 'record', 'source']);
    expect(['b', 'b', 'c', 'd'].map((s) => limiter.take(s))).toEqual(['record', 'record', 'record', 'global']);
    expect(limiter.size).toBe(3);
    for (let i = 0; i < 1000; i++) limiter.take(`x${i}`);
    expect(limiter.size).toBe(3);
    now = 1000;
    expect(limiter.take('a')).toBe('record');
  });

  it('caps each organization, and hands out what a closed window dropped, once', () => {
    let now = 0;
    const limiter = new DeniedLimiter({ perSource: 100, perOrganization: 2, global: 100, windowMs: 1000, maxOrganizations: 2 }, () => now);
    expect(['a', 'b', 'c', 'd'].map((s) => limiter.take(s, 'org-1'))).toEqual(['record', 'record', 'organization', 'organization']);
    expect(limiter.take('e', 'org-2')).toBe('record');
    expect(limiter.closed()).toEqual([]);
    expect(limiter.nextClose()).toBe(1000);
    now = 1000;
    expect(limiter.closed()).toEqual([{ orgId: 'org-1', dropped: 2, since: 0, until: 1000 }]);
    expect(limiter.closed()).toEqual([]);
    expect(limiter.nextClose()).toBeUndefined();
    // At its limit of organizations, the longest tracked one's window closes early, with what it dropped.
    now = 2000;
    expect(['f', 'g', 'h'].map((s) => limiter.take(s, 'org-3'))).toEqual(['record', 'record', 'organization']);
    expect(limiter.take('i', 'org-4')).toBe('record');
    expect(limiter.take('j', 'org-5')).toBe('record');
    expect(limiter.organizations).toBe(2);
    expect(limiter.closed()).toEqual([{ orgId: 'org-3', dropped: 1, since: 2000, until: 2000 }]);
  });
});
