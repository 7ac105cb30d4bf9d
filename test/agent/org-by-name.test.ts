/**
 * `fleetplane agent --org` takes the organization's id or its name: the
 * first start checks a name against the registration key's organization
 * (GET /api/registration_key names it since v1.20); a later start checks it
 * against the organization the state directory belongs to.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AgentFatalError, StateDir, agentHelp } from '../../src/agent/index.js';
import { ensureEnrolled, type EnrollmentInput } from '../../src/agent/identity/enrollment.js';
import type { FetchLike } from '../../src/client/index.js';
import { orgWithKey, useAgentServer } from './support/harness.js';

const env = useAgentServer('fp-org-name-');
const logger = pino({ level: 'silent' });
const signal = new AbortController().signal;

async function enroll(over: Partial<EnrollmentInput> & Pick<EnrollmentInput, 'org'>): Promise<{ result: Awaited<ReturnType<typeof ensureEnrolled>>; stateDir: StateDir }> {
  const stateDir = over.stateDir ?? new StateDir(await env.stateDir());
  const result = await ensureEnrolled({ stateDir, server: env.url, registrationKey: undefined, hostname: 'h', endpoints: [], logger, ...over }, signal);
  return { result, stateDir };
}

async function fatal(p: Promise<unknown>): Promise<AgentFatalError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentFatalError);
  return err as AgentFatalError;
}

describe('agent --org by id or name', () => {
  it("enrolls with --org naming the registration key's organization, and keeps the name", async () => {
    const { org, key } = await orgWithKey(env.admin, 'by-name');
    const { name } = await env.admin.organizations.get(org);
    const { result } = await enroll({ org: name, registrationKey: key });
    expect(result.enrolled).toBe(true);
    expect(result.identity).toMatchObject({ organization_id: org, organization_name: name });
    expect((await env.admin.devices.get(org, result.identity.device_id)).organization_id).toBe(org);
    // The id works as before.
    const byId = await enroll({ org, registrationKey: key });
    expect(byId.result.identity.organization_id).toBe(org);
  });

  it("refuses a name that isn't the key's organization, naming it, before enrolling anything", async () => {
    const { org, key } = await orgWithKey(env.admin, 'mine');
    const other = await orgWithKey(env.admin, 'theirs');
    const { name } = await env.admin.organizations.get(org);
    const { name: otherName } = await env.admin.organizations.get(other.org);
    const before = (await env.admin.devices.list(org)).items.length;
    const err = await fatal(enroll({ org: otherName, registrationKey: key }));
    expect(err.reason).toBe('config');
    expect(err.message).toBe(`--org "${otherName}" is not the registration key's organization, ${name} (${org}): give its id or name, or leave --org out`);
    const typo = await fatal(enroll({ org: 'no-such-org', registrationKey: key }));
    expect(typo.message).toContain(`--org "no-such-org" is not the registration key's organization, ${name} (${org})`);
    expect((await env.admin.devices.list(org)).items).toHaveLength(before);
    expect((await env.admin.devices.list(other.org)).items).toHaveLength(0);
  });

  it('on a later start, takes the id, the name, or the name after a rename, and refuses any other', async () => {
    const { org, key } = await orgWithKey(env.admin, 'later');
    const { name } = await env.admin.organizations.get(org);
    const { stateDir } = await enroll({ org: undefined, registrationKey: key });
    expect((await stateDir.loadIdentity())?.organization_name).toBe(name);
    for (const ref of [org, name]) expect((await enroll({ org: ref, stateDir })).result.enrolled).toBe(false);

    const renamed = `${name}-renamed`;
    await env.admin.organizations.update(org, { name: renamed });
    expect((await enroll({ org: renamed, stateDir })).result.enrolled).toBe(false);

    const err = await fatal(enroll({ org: 'elsewhere', stateDir }));
    expect(err.reason).toBe('state_dir');
    expect(err.message).toBe(`the state directory belongs to organization ${renamed} (${org}), not elsewhere; use another --state-dir to enroll there`);
    const otherId = await fatal(enroll({ org: '00000000-0000-4000-8000-0000000000ff', stateDir }));
    expect(otherId.message).toMatch(/^the state directory belongs to organization .* \(.*\), not 00000000-0000-4000-8000-0000000000ff;/);
  });

  it('says to give the id when the server (before v1.20) does not name the key\'s organization', async () => {
    const orgId = '00000000-0000-4000-8000-0000000000aa';
    const fetch: FetchLike = async (url) => {
      if (new URL(url).pathname !== '/api/registration_key') throw new Error(`unexpected request ${url}`);
      const key = { id: '00000000-0000-4000-8000-0000000000bb', organization_id: orgId, description: '', single_use: false, ephemeral: false, tags: [], expires_at: null, used: false, created_at: '2026-01-01T00:00:00Z' };
      return new Response(JSON.stringify(key), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const err = await fatal(enroll({ org: 'acme', registrationKey: 'fpr_key', server: 'http://fleet.test', fetch }));
    expect(err.message).toBe(`--org "acme": the server (before protocol v1.20) doesn't tell the name of the registration key's organization; give its id, ${orgId}, or leave --org out`);
  });

  it('says so in agent --help', () => {
    expect(agentHelp()).toMatch(/--org +\[FLEETPLANE_AGENT_ORG\] Organization id or name to enroll in/);
  });
});
