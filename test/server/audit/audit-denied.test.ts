/**
 * Issue 13: refused writes (401, 403) are recorded, rate-limited per source
 * address and over all; what is dropped is counted (docs/protocol.md "Audit log").
 */
import { describe, expect, it } from 'vitest';
import { HEADERS, paths } from '../../../src/protocol/index.js';
import { DeniedLimiter } from '../../../src/server/audit/index.js';
import { useServer } from '../fixtures.js';
import { auditRows } from './audit-support.js';

describe('refused writes in the audit log', () => {
  const h = useServer('pglite');

  const post = (org: string, token: string, remoteAddress: string) =>
    h().server.app.inject({
      method: 'POST',
      url: paths.securityGroups(org),
      remoteAddress,
      headers: { [HEADERS.authorization]: `Bearer ${token}`, [HEADERS.contentType]: 'application/json', 'user-agent': 'prober' },
      payload: '{}',
    });

  it('records the route, the status and the actor when one resolved; reads are not recorded', async () => {
    const s = h();
    const org = await s.createOrg();
    const read = await s.ok<{ id: string; token: string }>(201, 'POST', paths.tokens(org.id), { body: { role: 'read' } });
    expect((await post(org.id, read.token, '10.1.0.1')).statusCode).toBe(403);
    expect((await post(org.id, 'fp_nonsense', '10.1.0.2')).statusCode).toBe(401);
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
      expect.objectContaining({ actor_type: 'anonymous', actor_id: null, source: '10.1.0.2', details: expect.objectContaining({ status: 401, code: 'unauthorized' }) }),
    ]);
  });

  it('records at most 10 per source address per minute and counts the rest as dropped', async () => {
    const s = h();
    const org = await s.createOrg();
    const before = (await s.server.ctx.metrics.auditDeniedDropped.get()).values.find((v) => v.labels.limit === 'source')?.value ?? 0;
    for (let i = 0; i < 25; i++) expect((await post(org.id, 'fp_nonsense', '10.2.0.1')).statusCode).toBe(401);
    const recorded = (await auditRows(s, org.id)).filter((r) => r.action === 'denied' && r.source === '10.2.0.1');
    expect(recorded.length).toBe(10);
    const after = (await s.server.ctx.metrics.auditDeniedDropped.get()).values.find((v) => v.labels.limit === 'source')?.value ?? 0;
    expect(after - before).toBe(15);
    // Another address is recorded still.
    await post(org.id, 'fp_nonsense', '10.2.0.2');
    expect((await auditRows(s, org.id)).filter((r) => r.source === '10.2.0.2').length).toBe(1);
    const text = await s.server.ctx.metrics.registry.metrics();
    expect(text).toMatch(/fleetplane_audit_denied_dropped_total\{limit="source"\} \d+/);
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
});
