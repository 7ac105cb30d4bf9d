/**
 * Issue 37: `fleetplane ctl registration-keys get <key>` against a real
 * server, as the other `get` commands print: a field a line in a fixed
 * order, nested values as YAML, the key taken by id or by a description no
 * other key has, and the object as sent with `-o json`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrationKey } from '../../src/protocol/index.js';
import { ctlAt } from '../client/support/ctl-runner.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, type RealServer } from './support/real-server.js';

let rs: RealServer;

beforeAll(async () => {
  rs = await startRealServer();
});
afterAll(async () => {
  await rs?.close();
});

describe('ctl registration-keys get', () => {
  it('prints one key a field a line in a fixed order, by description or id; -o json as the server sent it', async () => {
    const org = uniqueName('keys-get');
    const orgId = (await rs.admin.organizations.create({ name: org })).id;
    const key = await rs.admin.registrationKeys.create(orgId, { description: 'rack 4', single_use: true, tags: ['tag:web', 'tag:db'] });
    const ctl = (argv: string[]) => ctlAt(rs.url, ADMIN_TOKEN, ['registration-keys', 'get', ...argv, '--org', org]);

    const byName = await ctl(['rack 4']);
    expect(byName.code, byName.err).toBe(0);
    expect(byName.out).toBe(
      [
        `id:               ${key.id}`,
        'description:      rack 4',
        'single_use:       true',
        'used:             false',
        'ephemeral:        false',
        'tags:',
        '  - tag:db',
        '  - tag:web',
        `organization_id:  ${orgId}`,
        'created_by:',
        '  credential_kind: admin',
        '  credential_id: null',
        '  user_id: null',
        `created_at:       ${key.created_at}`,
        `expires_at:       ${key.expires_at ?? ''}`,
        '',
      ].join('\n'),
    );
    const byId = await ctl([key.id]);
    expect(byId.code, byId.err).toBe(0);
    expect(byId.out).toBe(byName.out);

    const json = await ctl(['rack 4', '-o', 'json']);
    expect(json.code, json.err).toBe(0);
    const { key: _secret, ...stored } = key;
    expect(JSON.parse(json.out) as RegistrationKey).toEqual(stored);
    expect(json.out).not.toContain(key.key);
  });

  it('a description no key has, or two keys have, exits 1 naming the candidates', async () => {
    const org = uniqueName('keys-get');
    const orgId = (await rs.admin.organizations.create({ name: org })).id;
    const a = await rs.admin.registrationKeys.create(orgId, { description: 'twin' });
    const b = await rs.admin.registrationKeys.create(orgId, { description: 'twin' });
    const missing = await ctlAt(rs.url, ADMIN_TOKEN, ['registration-keys', 'get', 'nobody', '--org', org]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(`no registration key named "nobody" in organization ${org}`);
    const twins = await ctlAt(rs.url, ADMIN_TOKEN, ['registration-keys', 'get', 'twin', '--org', org]);
    expect(twins.code).toBe(1);
    expect(twins.err).toContain(`(${a.id}, ${b.id})`);
  });
});
