/**
 * Issue 13: every REST write route records an audit entry. Driven from
 * ACCESS_RULES: a write route that is neither driven here (and records) nor
 * listed with its reason fails, so a new route cannot go unaudited.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths, ROUTES, type AuditAction, type AuditKind } from '../../../src/protocol/index.js';
import { ACCESS_RULES } from '../../../src/server/access/index.js';
import { hashSecret } from '../../../src/server/store/index.js';
import { uniqueName, useServer, wgKey, type Harness, type InjectResponse } from '../fixtures.js';
import { auditCount, auditRows } from './audit-support.js';

/** One successful call of a write route, and the entry it must record. */
interface Driver {
  call(s: Harness): Promise<InjectResponse>;
  expect: { action: AuditAction; kind: AuditKind };
}

/** Write routes that change no desired state, with the reason (docs/protocol.md "Audit log"). */
const NOT_AUDITED: Readonly<Record<string, string>> = {
  [`PUT ${ROUTES.deviceStatus}`]: 'status reports are observed state, not a change',
  [`POST ${ROUTES.deviceRpc}`]: 'a call to an agent, relayed; it changes nothing the server keeps',
  [`POST ${ROUTES.authTokenSession}`]: 'sets a cookie in the browser holding a token it already has; nothing on the server changes',
  [`DELETE ${ROUTES.authTokenSession}`]: 'clears that cookie; the token stays as it was',
};

/**
 * Identity's login routes (no credential: the login names its actor): they
 * need a real OpenID provider, so the identity tests drive them
 * (test/identity/). Each must leave this list once a test here drives it.
 */
const DRIVEN_ELSEWHERE: Readonly<Record<string, string>> = {
  [`POST ${ROUTES.authDevice}`]: 'starts a device login at the identity provider',
  [`POST ${ROUTES.authDeviceToken}`]: 'a device login polling for its session',
};

interface World {
  org: string;
  user: string;
  session: string;
}

async function userWithSession(s: Harness, org: string, role: 'owner' | 'admin' | 'read'): Promise<{ user: string; session: string; sessionId: string }> {
  const user = randomUUID();
  const sessionId = randomUUID();
  const session = `fp_session_${randomUUID()}`;
  await s.server.db.query(`INSERT INTO users (id, issuer, subject, email) VALUES ($1, 'https://issuer.test', $2, $3)`, [user, user, `${user}@example.test`]);
  await s.server.db.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)`, [org, user, role]);
  await s.server.db.query(
    `INSERT INTO tokens (id, secret_hash, kind, role, user_id, expires_at) VALUES ($1, $2, 'session', 'user', $3, now() + interval '1 hour')`,
    [sessionId, hashSecret(session), user],
  );
  return { user, session, sessionId };
}

const DRIVERS: Readonly<Record<string, (w: World) => Driver>> = {
  [`POST ${ROUTES.authSessionRefresh}`]: (w) => ({
    call: (s) => s.call('POST', paths.authSessionRefresh(), { token: w.session }),
    expect: { action: 'renew', kind: 'session' },
  }),
  [`POST ${ROUTES.authLogout}`]: (w) => ({
    call: async (s) => s.call('POST', paths.authLogout(), { token: (await userWithSession(s, w.org, 'read')).session }),
    expect: { action: 'revoke', kind: 'session' },
  }),
  [`DELETE ${ROUTES.userSession}`]: (w) => ({
    call: async (s) => {
      const other = await userWithSession(s, w.org, 'read');
      return s.call('DELETE', paths.userSession('me', other.sessionId), { token: other.session });
    },
    expect: { action: 'revoke', kind: 'session' },
  }),
  [`POST ${ROUTES.organizations}`]: () => ({
    call: (s) => s.call('POST', paths.organizations(), { token: s.admin, body: { name: uniqueName() } }),
    expect: { action: 'create', kind: 'organization' },
  }),
  [`PATCH ${ROUTES.organization}`]: (w) => ({
    call: (s) => s.call('PATCH', paths.organization(w.org), { token: s.admin, body: { description: randomUUID() } }),
    expect: { action: 'update', kind: 'organization' },
  }),
  [`DELETE ${ROUTES.organization}`]: () => ({
    call: async (s) => s.call('DELETE', paths.organization((await s.createOrg()).id), { token: s.admin }),
    expect: { action: 'delete', kind: 'organization' },
  }),
  [`POST ${ROUTES.devices}`]: (w) => ({
    call: async (s) =>
      s.call('POST', paths.devices(w.org), { token: (await s.createRegKey(w.org)).key, body: { hostname: uniqueName('h'), public_key: wgKey() } }),
    expect: { action: 'create', kind: 'device' },
  }),
  [`PATCH ${ROUTES.device}`]: (w) => ({
    call: async (s) => s.call('PATCH', paths.device(w.org, (await s.createDevice(w.org)).id), { token: s.admin, body: { hostname: uniqueName('p') } }),
    expect: { action: 'update', kind: 'device' },
  }),
  [`DELETE ${ROUTES.device}`]: (w) => ({
    call: async (s) => s.call('DELETE', paths.device(w.org, (await s.createDevice(w.org)).id), { token: s.admin }),
    expect: { action: 'delete', kind: 'device' },
  }),
  [`POST ${ROUTES.deviceToken}`]: (w) => ({
    call: async (s) => {
      const d = await s.createDevice(w.org);
      return s.call('POST', paths.deviceToken(w.org, d.id), { token: d.device_token });
    },
    expect: { action: 'renew', kind: 'device_token' },
  }),
  [`DELETE ${ROUTES.deviceToken}`]: (w) => ({
    call: async (s) => s.call('DELETE', paths.deviceToken(w.org, (await s.createDevice(w.org)).id), { token: s.admin }),
    expect: { action: 'revoke', kind: 'device_token' },
  }),
  [`POST ${ROUTES.securityGroups}`]: (w) => ({
    call: (s) => s.call('POST', paths.securityGroups(w.org), { token: s.admin, body: {} }),
    expect: { action: 'create', kind: 'security_group' },
  }),
  [`PATCH ${ROUTES.securityGroup}`]: (w) => ({
    call: async (s) => s.call('PATCH', paths.securityGroup(w.org, (await s.createGroup(w.org)).id), { token: s.admin, body: { description: 'x' } }),
    expect: { action: 'update', kind: 'security_group' },
  }),
  [`DELETE ${ROUTES.securityGroup}`]: (w) => ({
    call: async (s) => s.call('DELETE', paths.securityGroup(w.org, (await s.createGroup(w.org)).id), { token: s.admin }),
    expect: { action: 'delete', kind: 'security_group' },
  }),
  [`PUT ${ROUTES.policy}`]: (w) => ({
    call: (s) => s.call('PUT', paths.policy(w.org), { token: s.admin, payload: 'network: {mtu: 1380}\n', headers: { [HEADERS.contentType]: MEDIA.yaml } }),
    expect: { action: 'update', kind: 'organization' },
  }),
  [`DELETE ${ROUTES.policy}`]: (w) => ({
    call: async (s) => {
      await s.ok(200, 'PUT', paths.policy(w.org), { payload: 'security_groups: {web: {}}\n', headers: { [HEADERS.contentType]: MEDIA.yaml } });
      return s.call('DELETE', paths.policy(w.org), { token: s.admin });
    },
    expect: { action: 'update', kind: 'organization' },
  }),
  [`POST ${ROUTES.tokens}`]: (w) => ({
    call: (s) => s.call('POST', paths.tokens(w.org), { token: s.admin, body: { role: 'read' } }),
    expect: { action: 'create', kind: 'token' },
  }),
  [`DELETE ${ROUTES.token}`]: (w) => ({
    call: async (s) => {
      const t = await s.ok<{ id: string }>(201, 'POST', paths.tokens(w.org), { body: { role: 'read' } });
      return s.call('DELETE', paths.token(w.org, t.id), { token: s.admin });
    },
    expect: { action: 'revoke', kind: 'token' },
  }),
  [`POST ${ROUTES.tokenReparent}`]: (w) => ({
    call: async (s) => {
      const t = await s.ok<{ id: string }>(201, 'POST', paths.tokens(w.org), { body: { role: 'read' } });
      return s.call('POST', paths.tokenReparent(w.org, t.id), { token: s.admin });
    },
    expect: { action: 'update', kind: 'token' },
  }),
  [`POST ${ROUTES.registrationKeyReparent}`]: (w) => ({
    call: async (s) => s.call('POST', paths.registrationKeyReparent(w.org, (await s.createRegKey(w.org)).id), { token: s.admin }),
    expect: { action: 'update', kind: 'registration_key' },
  }),
  [`POST ${ROUTES.acceptInvitation}`]: (w) => ({
    call: async (s) => {
      const inv = await s.ok<{ token: string }>(201, 'POST', paths.invitations(w.org), { body: { role: 'read' } });
      const other = await userWithSession(s, (await s.createOrg()).id, 'read');
      return s.call('POST', paths.acceptInvitation(), { token: other.session, body: { token: inv.token } });
    },
    expect: { action: 'update', kind: 'invitation' },
  }),
  [`POST ${ROUTES.registrationKeys}`]: (w) => ({
    call: (s) => s.call('POST', paths.registrationKeys(w.org), { token: s.admin, body: {} }),
    expect: { action: 'create', kind: 'registration_key' },
  }),
  [`DELETE ${ROUTES.registrationKey}`]: (w) => ({
    call: async (s) => s.call('DELETE', paths.registrationKey(w.org, (await s.createRegKey(w.org)).id), { token: s.admin }),
    expect: { action: 'delete', kind: 'registration_key' },
  }),
  [`PATCH ${ROUTES.member}`]: (w) => ({
    call: async (s) => s.call('PATCH', paths.member(w.org, (await userWithSession(s, w.org, 'read')).user), { token: s.admin, body: { role: 'admin' } }),
    expect: { action: 'update', kind: 'member' },
  }),
  [`DELETE ${ROUTES.member}`]: (w) => ({
    call: async (s) => s.call('DELETE', paths.member(w.org, (await userWithSession(s, w.org, 'read')).user), { token: s.admin }),
    expect: { action: 'delete', kind: 'member' },
  }),
  [`POST ${ROUTES.invitations}`]: (w) => ({
    call: (s) => s.call('POST', paths.invitations(w.org), { token: s.admin, body: { email: `${randomUUID()}@example.test`, role: 'read' } }),
    expect: { action: 'create', kind: 'invitation' },
  }),
  [`DELETE ${ROUTES.invitation}`]: (w) => ({
    call: async (s) => {
      const inv = await s.ok<{ id: string }>(201, 'POST', paths.invitations(w.org), { body: { email: `${randomUUID()}@example.test`, role: 'read' } });
      return s.call('DELETE', paths.invitation(w.org, inv.id), { token: s.admin });
    },
    expect: { action: 'revoke', kind: 'invitation' },
  }),
  [`POST ${ROUTES.userApiKeys}`]: (w) => ({
    call: (s) => s.call('POST', paths.userApiKeys('me'), { token: w.session, body: { organizations: [w.org], role: 'read' } }),
    expect: { action: 'create', kind: 'api_key' },
  }),
  [`DELETE ${ROUTES.userApiKey}`]: (w) => ({
    call: async (s) => {
      const key = await s.ok<{ id: string }>(201, 'POST', paths.userApiKeys('me'), { token: w.session, body: { organizations: [w.org], role: 'read' } });
      return s.call('DELETE', paths.userApiKey('me', key.id), { token: w.session });
    },
    expect: { action: 'revoke', kind: 'api_key' },
  }),
};

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const writeRoutes = ACCESS_RULES.filter((r) => r.entry === 'rest' && WRITES.has(r.method)).map((r) => `${r.method} ${r.route}`);

describe('every REST write route records an audit entry', () => {
  const h = useServer('pglite');

  it('each write route is driven here or listed with its reason', () => {
    const unaccounted = writeRoutes.filter((k) => !(k in DRIVERS) && !(k in NOT_AUDITED) && !(k in DRIVEN_ELSEWHERE));
    expect(unaccounted, 'add a driver for each new write route (and record its change)').toEqual([]);
    const stale = [...Object.keys(DRIVERS), ...Object.keys(NOT_AUDITED), ...Object.keys(DRIVEN_ELSEWHERE)].filter((k) => !writeRoutes.includes(k));
    expect(stale, 'entries for routes that no longer exist').toEqual([]);
  });

  it.each(writeRoutes.filter((k) => k in DRIVERS))('%s', async (key) => {
    const s = h();
    const org = (await s.createOrg()).id;
    const { user, session } = await userWithSession(s, org, 'admin');
    const driver = DRIVERS[key]?.({ org, user, session });
    if (driver === undefined) throw new Error(`no driver for ${key}`);
    const before = await auditCount(s);
    const res = await driver.call(s);
    expect(res.statusCode, res.body).toBeLessThan(300);
    const rows = await auditRows(s);
    const last = rows.at(-1);
    expect(await auditCount(s)).toBeGreaterThan(before);
    expect({ action: last?.action, kind: last?.kind }).toEqual(driver.expect);
  });
});
