/**
 * `fleetplane ctl policy` in process against the real server (in-memory
 * storage): get returns the text as applied, apply changes the
 * organization, diff and test say so by their exit codes, a broken document
 * is reported by file, line and column, adopt and release move an
 * organization between objects and a document.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCtl } from '../../src/cli/ctl/index.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, type RealServer } from '../client-e2e/support/real-server.js';
import { TextBuffer, freshConfigPath, type CtlResult } from './support/ctl-runner.js';
import { POLICY_SAMPLE } from '../support/policy-sample.js';
import { scratchDir } from '../support/scratch-dir.js';

let rs: RealServer;
const dir = scratchDir('fp-ctl-policy');

beforeAll(async () => {
  rs = await startRealServer();
});
afterAll(async () => {
  await rs?.close();
});

async function ctl(argv: string[], stdin?: string): Promise<CtlResult> {
  const stdout = new TextBuffer();
  const stderr = new TextBuffer();
  const env = { FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: ADMIN_TOKEN, FLEETPLANE_CONFIG: freshConfigPath() };
  const code = await runCtl(argv, { stdout, stderr, env, cwd: dir, stdin: Readable.from(stdin === undefined ? [] : [stdin]) });
  return { code, out: stdout.text, err: stderr.text };
}

/** Writes `text` as `name` in the test's directory (ctl runs there: -f takes the bare name). */
function file(name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return name;
}

const SAMPLE = POLICY_SAMPLE;

const orgIds = new Map<string, string>();

/** A new organization's name (ctl takes names). */
async function newOrg(): Promise<string> {
  const name = uniqueName('policy');
  orgIds.set(name, (await rs.admin.organizations.create({ name })).id);
  return name;
}

async function revisionOf(name: string): Promise<number> {
  return (await rs.admin.organizations.get(orgIds.get(name) ?? name)).revision;
}

describe('fleetplane ctl policy', () => {
  it('diff, test, dry run, apply; get returns the exact text; apply again changes nothing', async () => {
    const org = await newOrg();
    const policy = file('policy.yaml', SAMPLE);

    const before = await ctl(['policy', 'get', '--org', org, '-o', 'json']);
    expect(before.code, before.err).toBe(0);
    const generated = JSON.parse(before.out) as { managed: boolean; etag: string; text: string };
    expect(generated.managed).toBe(false);
    expect(generated.etag).toMatch(/^"[0-9a-f]{16}"$/);
    // Without -o, the text itself and nothing else.
    expect((await ctl(['policy', 'get', '--org', org])).out).toBe(generated.text);

    const diff = await ctl(['policy', 'diff', '-f', policy, '--org', org]);
    expect(diff.code, diff.err).toBe(1);
    expect(diff.err).toBe('');
    expect(diff.out.split('\n')).toContain('+ /security_groups/db');

    expect(await ctl(['policy', 'test', '-f', policy, '--org', org])).toEqual({ code: 0, out: '1 test passed\n', err: '' });

    const dry = await ctl(['policy', 'apply', '-f', policy, '--org', org, '--dry-run']);
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toContain('+ /security_groups/db\n');
    expect(dry.out).toMatch(/^dry run: nothing changed; /m);
    expect(JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out)).toMatchObject({ managed: false });

    const applied = await ctl(['policy', 'apply', '-f', policy, '--org', org]);
    expect(applied.code, applied.err).toBe(0);
    const lines = applied.out.trimEnd().split('\n');
    expect(lines).toContain('+ /security_groups/db');
    expect(lines).toContain('tests: 1 passed');
    const revision = Number(/^applied: organization \S+ is at revision (\d+)$/.exec(lines.at(-1) ?? '')?.[1]);
    expect(revision).toBeGreaterThan(0);
    expect(await revisionOf(org)).toBe(revision);

    // The text as applied: comments, order, everything.
    const got = await ctl(['policy', 'get', '--org', org]);
    expect(got).toEqual({ code: 0, out: SAMPLE, err: '' });
    const json = JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out) as { managed: boolean; etag: string; text: string };
    expect(json).toMatchObject({ managed: true, text: SAMPLE });

    // The document owns the groups now: a REST write to them is refused.
    const sg = await ctl(['security-groups', 'create', '--org', org, '--name', 'other', '--allow', 'tcp:22']);
    expect(sg.code).toBe(1);
    expect(sg.err).toMatch(/field_owned_elsewhere, HTTP 409/);
    // What agents enforce is listed, and said to be the document's; a change to it is refused naming the owner.
    const listed = await ctl(['sg', 'list', '--org', org]);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toMatch(/\bdb\b/);
    expect(listed.err).toMatch(/policy document of .* manages these groups/);
    const shown = await ctl(['sg', 'get', 'db', '--org', org, '-o', 'json']);
    expect(JSON.parse(shown.out)).toMatchObject({ name: 'db', applies_to: ['tag:db'] });
    const edit = await ctl(['sg', 'update', 'db', '--org', org, '--description', 'x']);
    expect([edit.code, edit.err]).toEqual([1, expect.stringMatching(/owned by the organization's policy document.*field_owned_elsewhere, HTTP 409/)]);

    expect(await ctl(['policy', 'diff', '-f', policy, '--org', org])).toEqual({ code: 0, out: '', err: '' });
    const again = await ctl(['policy', 'apply', '-f', policy, '--org', org, '-o', 'json']);
    expect(again.code, again.err).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ applied: false, changes: [], revision, etag: json.etag });
  });

  it('apply -f - reads stdin; --if-match applies only over that document', async () => {
    const org = await newOrg();
    const stale = '"0000000000000000"';
    const refused = await ctl(['policy', 'apply', '-f', '-', '--org', org, '--if-match', stale], SAMPLE);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^error: .*\(precondition_failed, HTTP 412\)\n$/);
    expect(JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out)).toMatchObject({ managed: false });

    const { etag } = JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out) as { etag: string };
    const ok = await ctl(['policy', 'apply', '-f', '-', '--org', org, '--if-match', etag], SAMPLE);
    expect(ok.code, ok.err).toBe(0);
    expect((await ctl(['policy', 'get', '--org', org])).out).toBe(SAMPLE);
  });

  it('a failing test: test names it and exits 1, apply refuses it and changes nothing', async () => {
    const org = await newOrg();
    const failing = file('failing.yaml', SAMPLE.replace('expect: allow', 'expect: deny'));
    const tested = await ctl(['policy', 'test', '-f', failing, '--org', org]);
    expect(tested.code).toBe(1);
    expect(tested.err).toBe('');
    const [first, summary] = tested.out.trimEnd().split('\n');
    expect(first).toMatch(/^FAIL test 0: tag:web -> tag:db tcp:5432, expect deny: .+/);
    expect(summary).toBe('1 test failed');

    const json = await ctl(['policy', 'test', '-f', failing, '--org', org, '-o', 'json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({ ok: false, failures: [{ index: 0, test: { from: 'tag:web', to: 'tag:db', port: 'tcp:5432', expect: 'deny' } }] });

    const revision = await revisionOf(org);
    const applied = await ctl(['policy', 'apply', '-f', failing, '--org', org]);
    expect(applied.code).toBe(1);
    expect(applied.out).toBe('');
    expect(applied.err).toMatch(/^test 0: tag:web -> tag:db tcp:5432, expect deny: .+\nerror: .*\(policy_test_failed, HTTP 422\)\n$/);
    expect(await revisionOf(org)).toBe(revision);
    expect(JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out)).toMatchObject({ managed: false });
  });

  it('a broken document is reported as FILE:LINE:COLUMN, exit 1, nothing changed', async () => {
    const org = await newOrg();
    // Line 9, the value after "proto: " (column 18).
    const badValue = file('bad-value.yaml', SAMPLE.replace('proto: tcp', 'proto: tcpx'));
    const applied = await ctl(['policy', 'apply', '-f', badValue, '--org', org]);
    expect(applied.code).toBe(1);
    expect(applied.out).toBe('');
    expect(applied.err).toMatch(/^error: bad-value\.yaml:9:\d+: .*\(policy_invalid, HTTP 400\)\n$/);

    // Not YAML at all: a tab-indented key under a mapping (line 3).
    const notYaml = file('not-yaml.yaml', 'tag_owners:\n  tag:web: [role:admin]\n\ttag:db: [\n');
    for (const verb of ['apply', 'diff', 'test']) {
      const r = await ctl(['policy', verb, '-f', notYaml, '--org', org]);
      expect({ verb, code: r.code }).toEqual({ verb, code: 1 });
      expect(r.err).toMatch(/^error: not-yaml\.yaml:\d+:\d+: .*\(policy_invalid, HTTP 400\)\n$/);
    }
    // From stdin, the name is <stdin>.
    const piped = await ctl(['policy', 'apply', '-f', '-', '--org', org], SAMPLE.replace('proto: tcp', 'proto: tcpx'));
    expect(piped.err).toMatch(/^error: <stdin>:9:\d+: /);
    expect(JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out)).toMatchObject({ managed: false });
  });

  it('adopt moves an organization to the document generated from its objects; release hands it back', async () => {
    const org = await newOrg();
    const created = await ctl(['security-groups', 'create', '--org', org, '--name', 'web', '--allow', 'tcp:443']);
    expect(created.code, created.err).toBe(0);
    const revision = await revisionOf(org);

    const adopted = await ctl(['policy', 'adopt', '--org', org]);
    expect(adopted.code, adopted.err).toBe(0);
    expect(adopted.out).toMatch(new RegExp(`^organization ${org} is managed by its policy document now, at revision (\\d+)\\n`));
    expect(adopted.out).toContain(`fleetplane ctl policy get --org ${org} > policy.yaml`);
    const got = JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out) as { managed: boolean; text: string };
    expect(got.managed).toBe(true);
    expect(got.text).toMatch(/^ {2}web:$/m);
    // The same rules: a diff of the text it now holds changes nothing.
    expect(await ctl(['policy', 'diff', '-f', file('adopted.yaml', got.text), '--org', org])).toEqual({ code: 0, out: '', err: '' });
    expect(await revisionOf(org)).toBeGreaterThanOrEqual(revision);

    // Adopting again leaves it as it is.
    const twice = await ctl(['policy', 'adopt', '--org', org]);
    expect(twice.code, twice.err).toBe(0);
    expect(twice.out).toMatch(/already managed/);

    const released = await ctl(['policy', 'release', '--org', org]);
    expect(released.code, released.err).toBe(0);
    expect(released.out).toMatch(/^organization \S+ is not managed by a policy document \(revision \d+\): its security groups, tag owners and network settings are editable again\n$/);
    expect(JSON.parse((await ctl(['policy', 'get', '--org', org, '-o', 'json'])).out)).toMatchObject({ managed: false });
    // Editable again, and the group is still there.
    const groups = await ctl(['security-groups', 'list', '--org', org, '-o', 'json']);
    expect((JSON.parse(groups.out) as Array<{ name: string }>).map((g) => g.name)).toEqual(['web']);
    expect((await ctl(['security-groups', 'update', 'web', '--org', org, '--allow', 'tcp:8443'])).code).toBe(0);
    // Releasing an organization no document manages does nothing, successfully.
    expect((await ctl(['policy', 'release', '--org', org, '-o', 'json'])).code).toBe(0);
  });

  it.each([
    [['policy', 'apply', '--org', 'acme'], 'fleetplane ctl policy apply: missing -f FILE (the policy document; - reads stdin) (see --help)'],
    [['policy', 'diff', '--org', 'acme'], 'fleetplane ctl policy diff: missing -f FILE (the policy document; - reads stdin) (see --help)'],
    [['policy', 'get', '--org', 'acme', '--dry-run'], 'fleetplane ctl policy get: flag --dry-run does not apply here (see --help)'],
    [['policy', 'frobnicate'], 'fleetplane ctl policy: unknown verb "frobnicate" (one of get, apply, diff, test, adopt, release) (see --help)'],
  ])('usage error %j → exit 2', async (argv, message) => {
    expect(await ctl(argv)).toEqual({ code: 2, out: '', err: `${message}\n` });
  });

  it('a file that cannot be read is a usage error naming it', async () => {
    const r = await ctl(['policy', 'diff', '-f', 'missing.yaml', '--org', 'acme']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^fleetplane ctl policy diff: -f missing\.yaml: ENOENT/);
  });
});
