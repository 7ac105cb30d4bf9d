/**
 * What ctl sends for the other spellings it takes: any spelling of a kind
 * to `audit --kind`; and that a bad one is a usage error before anything
 * is asked of the server.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ctlRunner } from './support/ctl-runner.js';

let server: FakeFleetServer;
const ctl = ctlRunner(() => server);

beforeEach(async () => {
  server = await new FakeFleetServer().start();
});
afterEach(async () => {
  await server.close();
});

/** The query of the last request to `path` (under the organization). */
function lastQuery(path: string): URLSearchParams {
  const req = server.requests.findLast((r) => r.url.split('?')[0] === `/api/organizations/${server.org}/${path}`);
  if (req === undefined) throw new Error(`no request to ${path}`);
  return new URLSearchParams(req.url.split('?')[1] ?? '');
}

describe('ctl audit', () => {
  it.each(['security-groups', 'security-group', 'security_groups', 'sg'])('sends --kind %s as the stored security_group', async (kind) => {
    const r = await ctl(['audit', '--org', server.org, '--kind', kind]);
    expect(r, r.err).toMatchObject({ code: 0, err: '' });
    expect(lastQuery('audit').get('kind')).toBe('security_group');
  });

  it.each([
    [['--kind', 'planets'], /^fleetplane ctl audit: --kind: unknown kind "planets": use organization, device, security-group, .* \(see --help\)\n$/],
  ])('refuses %j with exit 2, asking the server nothing', async (flags, message) => {
    const r = await ctl(['audit', '--org', server.org, ...flags]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });
});
