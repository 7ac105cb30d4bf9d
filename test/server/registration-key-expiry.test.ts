/**
 * Issue 36, part 4d: registration keys expire by default (docs/protocol.md
 * "Device", registration keys): `--registration-key-ttl` (one hour) when the
 * request names no `expires_at`, at most `--registration-key-max-ttl` (90
 * days) away, and never "never" while there is a maximum. The answer says
 * when the key ends.
 */
import { describe, expect, it } from 'vitest';
import { paths, type CreatedRegistrationKey } from '../../src/protocol/index.js';
import { parseSettings, SettingsError } from '../../src/server/index.js';
import { errorCode, useServer, withServer, type Harness } from './fixtures.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

async function createKey(h: Harness, body: Record<string, unknown>): Promise<{ status: string; key?: CreatedRegistrationKey }> {
  const org = (await h.createOrg()).id;
  const res = await h.call('POST', paths.registrationKeys(org), { token: h.admin, body });
  if (res.statusCode !== 201) return { status: `${res.statusCode} ${errorCode(res) ?? ''}` };
  return { status: '201', key: res.json<CreatedRegistrationKey>() };
}

/** How far after `created_at` a key expires, ms (null: never). */
const lifetime = (k: CreatedRegistrationKey | undefined): number | null =>
  k?.expires_at === null || k === undefined ? null : Date.parse(k.expires_at) - Date.parse(k.created_at);

describe('registration key expiry (PGlite)', () => {
  const h = useServer('pglite');

  it('a key without expires_at expires an hour after its creation, and says so', async () => {
    const { key } = await createKey(h(), { description: 'rack 4' });
    const life = lifetime(key);
    expect(life).not.toBeNull();
    expect(Math.abs((life ?? 0) - HOUR)).toBeLessThan(5_000);
    const listed = await h().ok<{ items: CreatedRegistrationKey[] }>(200, 'GET', paths.registrationKeys(key?.organization_id ?? ''));
    expect(listed.items.map((k) => k.expires_at)).toEqual([key?.expires_at]);
  });

  it('expires_at is at most 90 days away; never ("null") is refused while there is a maximum', async () => {
    const within = new Date(Date.now() + 89 * DAY).toISOString();
    expect((await createKey(h(), { expires_at: within })).key?.expires_at).toBe(within);
    expect((await createKey(h(), { expires_at: new Date(Date.now() + 91 * DAY).toISOString() })).status).toBe('400 validation_failed');
    expect((await createKey(h(), { expires_at: null })).status).toBe('400 validation_failed');
  });

  it('an expired key enrolls nothing', async () => {
    const { key } = await createKey(h(), { expires_at: new Date(Date.now() - 1000).toISOString() });
    const res = await h().call('POST', paths.devices(key?.organization_id ?? ''), { token: key?.key, body: { hostname: 'late', public_key: Buffer.alloc(32, 7).toString('base64') } });
    expect(res.statusCode).toBe(401);
  });
});

describe('registration key expiry settings', () => {
  it('--registration-key-ttl sets the default lifetime', async () => {
    await withServer(
      'pglite',
      async (h) => {
        const life = lifetime((await createKey(h, {})).key);
        expect(Math.abs((life ?? 0) - 120_000)).toBeLessThan(5_000);
        expect((await createKey(h, { expires_at: new Date(Date.now() + 2 * DAY).toISOString() })).status).toBe('400 validation_failed');
      },
      { registrationKeyTtl: 120, registrationKeyMaxTtl: DAY / 1000 },
    );
  });

  it('with no maximum, keys may never expire (and do not by default with a TTL of 0), as before', async () => {
    await withServer(
      'pglite',
      async (h) => {
        expect(lifetime((await createKey(h, {})).key)).toBeNull();
        expect(lifetime((await createKey(h, { expires_at: null })).key)).toBeNull();
      },
      { registrationKeyTtl: 0, registrationKeyMaxTtl: 0 },
    );
  });

  it('are read from flags and the environment, defaults one hour and 90 days; a TTL past the maximum is refused', () => {
    expect(parseSettings([], {})).toMatchObject({ registrationKeyTtl: 3600, registrationKeyMaxTtl: 7_776_000 });
    expect(parseSettings(['--registration-key-ttl', '600', '--registration-key-max-ttl=86400'], {})).toMatchObject({ registrationKeyTtl: 600, registrationKeyMaxTtl: 86_400 });
    expect(parseSettings([], { FLEETPLANE_REGISTRATION_KEY_TTL: '60', FLEETPLANE_REGISTRATION_KEY_MAX_TTL: '0' })).toMatchObject({ registrationKeyTtl: 60, registrationKeyMaxTtl: 0 });
    for (const argv of [['--registration-key-ttl', '100000', '--registration-key-max-ttl', '3600'], ['--registration-key-ttl', '0']]) {
      expect(() => parseSettings(argv, {})).toThrow(SettingsError);
      expect(() => parseSettings(argv, {})).toThrow(/--registration-key-ttl/);
    }
  });
});
