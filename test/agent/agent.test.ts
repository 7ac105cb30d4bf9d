/**
 * The agent daemon against a real server (listening on 127.0.0.1, embedded
 * PGlite), render dataplane: in this process, and as a real process for its
 * exit codes.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentFatalError, StateDir, type AgentOptions, type AgentStatusView } from '../../src/agent/index.js';
import { RenderDataplane, WIREGUARD_CONF_FILE, DataplaneError, generateKeyPair, type ApplyResult, type Dataplane, type DesiredDataplane } from '../../src/agent/dataplane/index.js';
import type { FetchLike } from '../../src/client/index.js';
import { AGENT_LOCAL_ROUTES, type Convergence } from '../../src/protocol/index.js';
import { agentOptions, localJson, orgWithKey, runAgent, useAgentServer, until } from './support/harness.js';
import { ensureBuilt, spawnFleetplane } from './support/processes.js';

const env = useAgentServer('fp-agent-', ensureBuilt);

async function fleet(name: string) {
  const { org, key } = await orgWithKey(env.admin, name);
  const options = async (over: Partial<AgentOptions> = {}) =>
    agentOptions({ server: env.url, org, registrationKey: key, stateDir: await env.stateDir(), ...over });
  const converged = (devices: number) =>
    until(async () => {
      const c = await env.admin.convergence(org);
      return c.devices === devices && c.at_head === devices ? c : undefined;
    }, `${devices} devices at the head`);
  return { org, key, options, converged };
}

/** A render dataplane that fails while `failing` is set, counting attempts. */
class FlakyDataplane implements Dataplane {
  readonly mode = 'render' as const;
  failing = false;
  attempts = 0;
  constructor(private readonly inner: RenderDataplane) {}
  apply(desired: DesiredDataplane, signal?: AbortSignal): Promise<ApplyResult> {
    this.attempts++;
    if (this.failing) return Promise.reject(new DataplaneError('render', 'injected failure'));
    return this.inner.apply(desired, signal);
  }
  cleanup() {
    return this.inner.cleanup();
  }
  describe() {
    return this.inner.describe();
  }
}

describe('the agent against a real server', () => {
  it('enrolls, converges at the head, serves /status and /force-sync, and reuses its identity after a restart', async () => {
    const f = await fleet('basic');
    const optsA = await f.options({ endpoints: ['192.0.2.1:51820'] });
    const a = await runAgent(optsA);
    const b = await runAgent(await f.options({ endpoints: ['192.0.2.2:51821'] }));
    const c = await f.converged(2);

    const status = await localJson(a.localPort, 'GET', AGENT_LOCAL_ROUTES.status);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ device_id: a.deviceId, organization_id: f.org, applied_revision: c.revision, apply_error: null, peers: 1, connected: true });

    const synced = await localJson(b.localPort, 'POST', AGENT_LOCAL_ROUTES.forceSync);
    expect(synced).toEqual({ status: 200, body: { applied_revision: c.revision } });

    const conf = await readFile(join(optsA.stateDir, WIREGUARD_CONF_FILE), 'utf8');
    const devB = await env.admin.devices.get(f.org, b.deviceId);
    expect(conf).toContain(`PublicKey = ${devB.public_key}`);
    expect(conf).toContain('Endpoint = 192.0.2.2:51821');
    expect((await env.admin.devices.get(f.org, a.deviceId)).endpoints).toEqual([{ source: 'manual', address: '192.0.2.1:51820' }]);

    await a.stop();
    expect(await a.done).toBeUndefined();
    expect((await env.admin.devices.get(f.org, a.deviceId)).status).toMatchObject({ online: false, applied_revision: c.revision });

    // A later start needs no registration key and enrolls nothing new.
    const again = await runAgent({ ...optsA, registrationKey: undefined, org: undefined });
    expect(again.deviceId).toBe(a.deviceId);
    await until(async () => (await env.admin.devices.get(f.org, a.deviceId)).status.online, 'the restarted agent to report online');
    await f.converged(2);
    await again.stop();
    await b.stop();
  });

  it('reports the head after a change of each kind, also one that changes nothing in its dataplane', async () => {
    const f = await fleet('kinds');
    const a = await runAgent(await f.options());
    await f.converged(1);
    const headIs = (revision: number) =>
      until(async () => {
        const c = await env.admin.convergence(f.org);
        return c.revision === revision && c.at_head === 1 ? c : undefined;
      }, `the agent at revision ${revision}`);
    const group = await env.admin.securityGroups.create(f.org, { description: 'unused', inbound_rules: [], outbound_rules: [] });
    await headIs(group.revision);
    const org = await env.admin.organizations.update(f.org, { description: 'changed' });
    await headIs(org.revision);
    const other = await env.admin.devices.create(f.org, { hostname: 'peer', public_key: generateKeyPair().publicKey });
    await headIs(other.revision);
    const groupAgain = await env.admin.securityGroups.update(f.org, group.id, { description: 'still unused' });
    await headIs(groupAgain.revision);
    await a.stop();
  });

  it('reports a failed apply, retries it with backoff while the previous state stays, and recovers', async () => {
    const f = await fleet('flaky');
    const opts = await f.options();
    const flaky = new FlakyDataplane(new RenderDataplane({ stateDir: opts.stateDir, interfaceName: opts.interfaceName }));
    // Retries at most 1 s apart: on a loaded machine the waits below see more attempts, and the default 30 s cap outlasts the last wait.
    const a = await runAgent(opts, { createDataplane: () => flaky, applyBackoff: { maxMs: 1_000 } });
    const before = await f.converged(1);
    const path = join(opts.stateDir, WIREGUARD_CONF_FILE);
    const good = await readFile(path, 'utf8');
    expect(good).toContain('MTU = 1420');

    flaky.failing = true;
    await env.admin.organizations.update(f.org, { network: { mtu: 1300 } });
    const failing = await until(async () => {
      const c = await env.admin.convergence(f.org);
      return c.error === 1 ? c : undefined;
    }, 'the apply error to be reported');
    expect(failing.not_converged[0]).toMatchObject({ id: a.deviceId, applied_revision: before.revision, apply_error: 'render: injected failure' });
    const attempts = flaky.attempts;
    await until(() => flaky.attempts >= attempts + 2, 'retries');
    expect(await readFile(path, 'utf8')).toBe(good);
    const local = (await localJson(a.localPort, 'GET', AGENT_LOCAL_ROUTES.status)).body;
    expect(local).toMatchObject({ applied_revision: before.revision, apply_error: 'render: injected failure' });

    flaky.failing = false;
    const after = await f.converged(1);
    expect(after.revision).toBe(failing.revision);
    expect(await readFile(path, 'utf8')).toContain('MTU = 1300');
    await a.stop();
  });

  it('repairs drift made by hand: at the periodic resync, and at once on force-sync', async () => {
    const f = await fleet('drift');
    const opts = await f.options({ resyncIntervalMs: 200 });
    const a = await runAgent(opts);
    await f.converged(1);
    const path = join(opts.stateDir, WIREGUARD_CONF_FILE);
    const good = await readFile(path, 'utf8');
    await writeFile(path, 'edited by hand\n');
    await until(async () => (await readFile(path, 'utf8')) === good, 'the resync to repair the file');
    await a.stop();

    const b = await runAgent({ ...opts, resyncIntervalMs: 300_000 });
    await writeFile(path, 'edited by hand again\n');
    expect((await localJson(b.localPort, 'POST', AGENT_LOCAL_ROUTES.forceSync)).status).toBe(200);
    expect(await readFile(path, 'utf8')).toBe(good);
    await b.stop();
  });

  it('force-sync re-lists from the server: it applies the head even while the watch stream is stalled', async () => {
    const f = await fleet('stalled');
    let paused = false;
    let resume: () => void = () => undefined;
    const fetchLike: FetchLike = async (input, init) => {
      const res = await fetch(input, init);
      if (!input.endsWith('/events') || !res.body) return res;
      const reader = res.body.getReader();
      const held = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          // A read may be pending when the test pauses: hold what it brings.
          while (paused) await new Promise<void>((r) => (resume = r));
          if (done) controller.close();
          else controller.enqueue(value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return new Response(held, { status: res.status, headers: res.headers });
    };
    const opts = await f.options();
    const a = await runAgent(opts, { fetch: fetchLike });
    const before = await f.converged(1);
    paused = true;
    const updated = await env.admin.organizations.update(f.org, { network: { routes: [{ destination: '203.0.113.0/24' }] } });
    const res = await localJson(a.localPort, 'POST', AGENT_LOCAL_ROUTES.forceSync);
    expect(res).toEqual({ status: 200, body: { applied_revision: updated.revision } });
    expect(await readFile(join(opts.stateDir, WIREGUARD_CONF_FILE), 'utf8')).toContain('203.0.113.0/24');
    const status = (await localJson(a.localPort, 'GET', AGENT_LOCAL_ROUTES.status)).body;
    expect(status).toMatchObject({ applied_revision: updated.revision, watch_revision: before.revision });
    paused = false;
    resume();
    await until(async () => (await a.agent.status()).watch_revision === updated.revision, 'the watch to catch up');
    await a.stop();
  });

  it('force-sync answers 503 with the reason when the server is unreachable', async () => {
    const f = await fleet('unreachable');
    let cut = false;
    const fetchLike: FetchLike = (input, init) => (cut ? Promise.reject(new TypeError('fetch failed: connection refused')) : fetch(input, init));
    const a = await runAgent(await f.options(), { fetch: fetchLike });
    await f.converged(1);
    cut = true;
    const res = await localJson(a.localPort, 'POST', AGENT_LOCAL_ROUTES.forceSync);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: { code: 'unavailable' } });
    expect(JSON.stringify(res.body)).toMatch(/could not be reached/);
    cut = false;
    expect((await localJson(a.localPort, 'POST', AGENT_LOCAL_ROUTES.forceSync)).status).toBe(200);
    await a.stop();
  });

  it('serves status and force-sync through the tunnel; force-sync answers once the dataplane reflects the head', async () => {
    const f = await fleet('tunnel');
    const opts = await f.options();
    const a = await runAgent(opts);
    await f.converged(1);
    await until(async () => ((await a.agent.status()).tunnel === 'connected' ? true : undefined), 'the tunnel');
    const status = (await env.admin.devices.rpc(f.org, a.deviceId, 'status')) as AgentStatusView;
    expect(status).toMatchObject({ device_id: a.deviceId, apply_error: null, connected: true });
    expect(status.detail?.firewall).toMatchObject({ mode: 'allow-all' });

    const updated = await env.admin.organizations.update(f.org, { network: { routes: [{ destination: '198.51.100.0/24' }] } });
    const result = (await env.admin.devices.rpc(f.org, a.deviceId, 'force-sync')) as { applied_revision: number };
    expect(result.applied_revision).toBeGreaterThanOrEqual(updated.revision);
    expect(await readFile(join(opts.stateDir, WIREGUARD_CONF_FILE), 'utf8')).toContain('198.51.100.0/24');
    const c: Convergence = await env.admin.convergence(f.org);
    expect(result.applied_revision).toBe(c.revision);
    await a.stop();
  });

  it('stops with a fatal error when its device is deleted, sends nothing for it afterwards, and a later start reports the revoked token', async () => {
    const f = await fleet('deleted');
    const puts: Array<{ body: string; status?: number }> = [];
    const fetchLike: FetchLike = async (input, init) => {
      if (init.method !== 'PUT') return fetch(input, init);
      const rec: { body: string; status?: number } = { body: String(init.body) };
      puts.push(rec);
      const res = await fetch(input, init);
      rec.status = res.status;
      return res;
    };
    const opts = await f.options({ statusIntervalMs: 50 });
    const a = await runAgent(opts, { fetch: fetchLike });
    await f.converged(1);
    await env.admin.devices.delete(f.org, a.deviceId);
    const err = await a.done;
    expect(err).toBeInstanceOf(AgentFatalError);
    expect(err).toMatchObject({ reason: expect.stringMatching(/^(device_deleted|token_refused)$/) });
    const rejected = puts.findIndex((p) => p.status !== undefined && p.status >= 400);
    if (rejected >= 0) expect(puts.length).toBe(rejected + 1);
    expect(puts.some((p) => JSON.parse(p.body).online === false)).toBe(false);
    const count = puts.length;
    await new Promise((r) => setTimeout(r, 150));
    expect(puts.length).toBe(count);

    const revived = await runAgent(opts).then(
      (r) => r.done,
      (e: unknown) => e,
    );
    expect(revived).toBeInstanceOf(AgentFatalError);
    expect(revived).toMatchObject({ reason: 'token_refused' });
    expect(String((revived as Error).message)).toMatch(/refused this device's token/);
  });

  it('stops with a fatal error when its local port is taken', async () => {
    const f = await fleet('port');
    const first = await runAgent(await f.options());
    const err = await runAgent(await f.options({ localPort: first.localPort })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentFatalError);
    expect(err).toMatchObject({ reason: 'config', message: expect.stringMatching(/--local-port/) });
    await first.stop();
  });

  it('refuses a bad registration key with a clear fatal error', async () => {
    const f = await fleet('badkey');
    const err = await runAgent(await f.options({ registrationKey: 'fpr_not_a_key' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentFatalError);
    expect(err).toMatchObject({ reason: 'enrollment_refused' });
  });
});

describe('fleetplane agent (process)', () => {
  it('prints its usage with --help and exits 0', async () => {
    const p = spawnFleetplane('agent', ['--help']);
    expect((await p.exit).code).toBe(0);
    expect(p.output()).toContain('--registration-key');
    expect(p.output()).toContain('FLEETPLANE_AGENT_STATE_DIR');
  });

  it('exits 2 with the bad setting named', async () => {
    const p = spawnFleetplane('agent', ['--state-dir', '/nonexistent', '--listen-port', 'many']);
    expect((await p.exit).code).toBe(2);
    expect(p.output()).toMatch(/--listen-port/);
  });

  it('exits 1 with a clear message when its token was revoked', async () => {
    const { org, key } = await orgWithKey(env.admin, 'cli');
    const dir = await env.stateDir();
    // A first start enrolls; stop it, delete the device (which revokes its token), start again.
    const first = spawnFleetplane('agent', ['--server', env.url, '--org', org, '--registration-key', key, '--state-dir', dir, '--log-level', 'warn']);
    const sd = new StateDir(dir);
    let identity;
    for (let i = 0; i < 600 && !(identity = await sd.loadIdentity().catch(() => undefined)); i++) await new Promise((r) => setTimeout(r, 50));
    expect(identity).toBeDefined();
    const stopped = await first.stop();
    expect(stopped.code, first.output().slice(-2000)).toBe(0);
    await env.admin.devices.delete(org, identity!.device_id);

    const again = spawnFleetplane('agent', ['--state-dir', dir, '--log-level', 'silent']);
    const exit = await again.exit;
    expect(exit.code).toBe(1);
    expect(again.output()).toMatch(/fatal \(token_refused\): the server refused this device's token/);
  });
});
