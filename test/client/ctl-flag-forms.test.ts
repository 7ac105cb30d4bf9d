/**
 * What ctl sends for the other spellings it takes: any spelling of a kind
 * to `audit --kind`, durations to `--since`/`--until` and `--expires-in`;
 * and that a bad one is a usage error before anything is asked of the server.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ago, ctlRunner, NOW } from './support/ctl-runner.js';

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

  it('sends --since and --until given as durations as the times that long ago, and RFC 3339 times as given', async () => {
    expect((await ctl(['audit', '--org', server.org, '--since', '7d', '--until', '1h'])).code).toBe(0);
    let q = lastQuery('audit');
    expect([q.get('since'), q.get('until')]).toEqual([ago(7 * 86_400), ago(3_600)]);
    expect((await ctl(['audit', '--org', server.org, '--since', '2029-12-01T00:00:00Z', '--until', '10m'])).code).toBe(0);
    q = lastQuery('audit');
    expect([q.get('since'), q.get('until')]).toEqual(['2029-12-01T00:00:00Z', new Date(NOW - 600_000).toISOString()]);
  });

  it.each([
    [['--kind', 'planets'], /^fleetplane ctl audit: --kind: unknown kind "planets": use organization, device, security-group, .* \(see --help\)\n$/],
    [['--since', 'yesterday'], /^fleetplane ctl audit: --since: "yesterday" is neither an RFC 3339 time \(2030-01-01T00:00:00Z\) nor a duration ago \(e\.g\. 30, 10m, 1h30m, 7d\) \(see --help\)\n$/],
    [['--until', '1 week'], /^fleetplane ctl audit: --until: "1 week" is neither an RFC 3339 time/],
  ])('refuses %j with exit 2, asking the server nothing', async (flags, message) => {
    const r = await ctl(['audit', '--org', server.org, ...flags]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });
});

describe('--expires-in', () => {
  it('tokens create and registration-keys create send it as expires_at that far from now', async () => {
    expect((await ctl(['tokens', 'create', '--org', server.org, '--role', 'read', '--expires-in', '30d'])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)?.body ?? '')).toEqual({ role: 'read', expires_at: new Date(NOW + 30 * 86_400_000).toISOString() });
    expect((await ctl(['registration-keys', 'create', '--org', server.org, '--expires-in', '10m'])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)?.body ?? '')).toEqual({ expires_at: new Date(NOW + 600_000).toISOString() });
  });

  it.each([
    [['tokens', 'create', '--org', 'acme', '--role', 'read', '--expires-in', 'soon'], 'fleetplane ctl tokens create: --expires-in: "soon" is not a duration (e.g. 30, 10m, 1h30m, 7d) (see --help)'],
    [
      ['registration-keys', 'create', '--org', 'acme', '--expires-at', '7d'],
      'fleetplane ctl registration-keys create: --expires-at: "7d" is not an RFC 3339 time (e.g. 2030-01-01T00:00:00Z); for a lifetime from now use --expires-in 7d (see --help)',
    ],
    [
      ['api-keys', 'create', '--role', 'read', '--expires-in', '1h', '--expires-at', '2030-02-01T00:00:00Z'],
      'fleetplane ctl api-keys create: give at most one of --expires-at and --expires-in (see --help)',
    ],
    [
      ['invitations', 'create', '--org', 'acme', '--role', 'read', '--expires-in', '7d', '--expires-at', '2030-02-01T00:00:00Z'],
      'fleetplane ctl invitations create: give at most one of --expires-at and --expires-in (see --help)',
    ],
  ])('refuses %j with exit 2, asking the server nothing', async (argv, message) => {
    const r = await ctl(argv);
    expect(r).toMatchObject({ code: 2, err: `${message}\n` });
    expect(server.requests).toHaveLength(0);
  });
});
