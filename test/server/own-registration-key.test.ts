/** `GET /api/registration_key`: a registration key looks up its own object (protocol v1.3), and its organization's name (v1.20). */
import { describe, expect, it } from 'vitest';
import { paths, type OwnRegistrationKey } from '../../src/protocol/index.js';
import { errorCode, useServer } from './fixtures.js';

describe('GET /api/registration_key (PGlite)', () => {
  const h = useServer('pglite');

  it("answers a registration key with its own object, its organization's id and name included, and never its secret", async () => {
    const s = h();
    const org = await s.createOrg();
    const other = await s.createOrg();
    const key = await s.createRegKey(org.id, { description: 'rack 7', single_use: false });
    await s.createRegKey(other.id);
    const res = await s.call('GET', paths.ownRegistrationKey(), { token: key.key });
    expect(res.statusCode).toBe(200);
    const body = res.json<OwnRegistrationKey>();
    expect(body).toEqual({
      id: key.id,
      organization_id: org.id,
      organization_name: org.name,
      description: 'rack 7',
      single_use: false,
      ephemeral: false,
      tags: [],
      expires_at: key.expires_at,
      used: false,
      created_at: key.created_at,
      created_by: { credential_kind: 'admin', credential_id: null, user_id: null },
    });
    expect(res.body).not.toContain(key.key);
  });

  it('refuses a used-up or expired key (401, as enrollment would) and every other token (403)', async () => {
    const s = h();
    const org = await s.createOrg();
    const once = await s.createRegKey(org.id, { single_use: true });
    expect((await s.call('GET', paths.ownRegistrationKey(), { token: once.key })).statusCode).toBe(200);
    await s.createDevice(org.id, {}, once.key);
    const usedUp = await s.call('GET', paths.ownRegistrationKey(), { token: once.key });
    expect([usedUp.statusCode, errorCode(usedUp)]).toEqual([401, 'unauthorized']);

    const expired = await s.createRegKey(org.id, { expires_at: new Date(Date.now() - 60_000).toISOString() });
    expect((await s.call('GET', paths.ownRegistrationKey(), { token: expired.key })).statusCode).toBe(401);
    expect((await s.call('GET', paths.ownRegistrationKey(), { token: 'fpr_unknown' })).statusCode).toBe(401);
    expect((await s.call('GET', paths.ownRegistrationKey())).statusCode).toBe(401);

    const device = await s.createDevice(org.id);
    const orgToken = await s.createToken(org.id, 'admin');
    for (const token of [s.admin, orgToken, device.device_token]) {
      const res = await s.call('GET', paths.ownRegistrationKey(), { token });
      expect([res.statusCode, errorCode(res)]).toEqual([403, 'forbidden']);
    }
  });
});
