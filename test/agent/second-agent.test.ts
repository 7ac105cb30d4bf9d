/**
 * Starting an agent the second time on a machine, and the first time with
 * only a registration key: against a real server (in this process, on
 * 127.0.0.1), agents in-process and as a real process.
 */
import { describe, expect, it } from 'vitest';
import { createServer, type AddressInfo } from 'node:net';
import pino from 'pino';
import { Agent, AgentFatalError, LocalApiAddressError, parseAgentOptions, readLocalApiAddress, StateDir } from '../../src/agent/index.js';
import { AGENT_LOCAL_ROUTES } from '../../src/protocol/index.js';
import { agentOptions, localJson, orgWithKey, runAgent, useAgentServer, until, type RunningAgent } from './support/harness.js';
import { ensureBuilt, spawnFleetplane, waitForOutput } from './support/processes.js';

const env = useAgentServer('fp-second-', ensureBuilt);

const deviceCount = async (org: string): Promise<number> => (await env.admin.devices.list(org)).items.length;

describe('a second agent on the same machine', () => {
  it('on the same state directory stops before enrolling: no second device, the first agent unharmed', async () => {
    const { org, key } = await orgWithKey(env.admin, 'same-dir');
    const dir = await env.stateDir();
    // Two first starts at once on an empty directory: without the lock each would make a key pair and enroll.
    const options = agentOptions({ server: env.url, org, registrationKey: key, stateDir: dir });
    const [a, b] = await Promise.allSettled([runAgent(options), runAgent(options)]);
    const started = [a, b].filter((r) => r.status === 'fulfilled').map((r) => r.value);
    const refused = [a, b].filter((r) => r.status === 'rejected').map((r) => r.reason as unknown);
    expect(started).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(AgentFatalError);
    expect(refused[0]).toMatchObject({ reason: 'state_dir', message: expect.stringContaining(`another agent (pid ${process.pid})`) });
    expect(await deviceCount(org)).toBe(1);
    const first = started[0];
    if (!first) throw new Error("no agent started");
    // A later twin, once the first runs, is refused the same way.
    await expect(runAgent(options)).rejects.toMatchObject({ reason: 'state_dir' });
    expect((await localJson(first.localPort, 'GET', AGENT_LOCAL_ROUTES.status)).body).toMatchObject({ device_id: first.deviceId });
    await first.stop();
    // Released at exit: the next start on the directory runs, as the same device.
    const again = await runAgent(agentOptions({ server: env.url, stateDir: dir }));
    expect(again.deviceId).toBe(first.deviceId);
    await again.stop();
  });

  it('with default settings and another state directory runs beside the first; clients find each from its state directory', async () => {
    const { org, key } = await orgWithKey(env.admin, 'side-by-side');
    const dirs = [await env.stateDir(), await env.stateDir()] as const;
    // What `fleetplane agent` runs with no --local-port.
    const options = (dir: string) => parseAgentOptions(['--server', env.url, '--registration-key', key, '--state-dir', dir, '--hostname', 'side-by-side'], {});
    const a = await runAgent(options(dirs[0]));
    let b: RunningAgent | undefined;
    try {
      b = await runAgent(options(dirs[1]));
      expect(a.localPort).not.toBe(b.localPort);
      expect(await deviceCount(org)).toBe(2);
      for (const [agent, dir] of [[a, dirs[0]], [b, dirs[1]]] as const) {
        const found = await readLocalApiAddress(dir);
        expect(found.port).toBe(agent.localPort);
        const res = await fetch(`${found.url}${AGENT_LOCAL_ROUTES.status}`);
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ device_id: agent.deviceId });
      }
      await a.stop();
      // A stopped agent's file is gone; the other one's stays, and its agent still answers.
      await expect(readLocalApiAddress(dirs[0])).rejects.toBeInstanceOf(LocalApiAddressError);
      expect((await localJson((await readLocalApiAddress(dirs[1])).port, 'GET', AGENT_LOCAL_ROUTES.status)).body).toMatchObject({ device_id: b.deviceId });
    } finally {
      await a.stop();
      await b?.stop();
    }
  });

  it('on the same explicit local API port (another state directory) stops before enrolling', async () => {
    const { org, key } = await orgWithKey(env.admin, 'same-port');
    const first = await runAgent(agentOptions({ server: env.url, org, registrationKey: key, stateDir: await env.stateDir() }));
    const secondDir = await env.stateDir();
    const err = await runAgent(agentOptions({ server: env.url, org, registrationKey: key, stateDir: secondDir, localPort: first.localPort })).catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'config', message: expect.stringMatching(/--local-port/) });
    expect(await deviceCount(org)).toBe(1);
    expect(await new StateDir(secondDir).loadIdentity()).toBeUndefined();
    await first.stop();
  });

  it('as a process on the same state directory exits 1 naming the running one', async () => {
    const { org, key } = await orgWithKey(env.admin, 'same-dir-process');
    const dir = await env.stateDir();
    const args = ['--server', env.url, '--registration-key', key, '--state-dir', dir, '--log-level', 'info'];
    const first = spawnFleetplane('agent', args);
    try {
      await waitForOutput(first, /"msg":"enrolled"/);
      const second = spawnFleetplane('agent', args);
      expect((await second.exit).code).toBe(1);
      expect(second.output()).toMatch(new RegExp(`fatal \\(state_dir\\): another agent \\(pid ${first.child.pid ?? 0}\\) is using this state directory`));
      expect(await deviceCount(org)).toBe(1);
      // The second one left the first one's address file alone.
      const { port } = await readLocalApiAddress(dir);
      await until(async () => (await localJson(port, 'GET', AGENT_LOCAL_ROUTES.status)).status === 200, 'the first agent answering on the port in its address file');
    } finally {
      expect((await first.stop()).code).toBe(0);
    }
    await expect(readLocalApiAddress(dir)).rejects.toBeInstanceOf(LocalApiAddressError);
  });
});

describe('the local API before enrollment', () => {
  it('listens from the start and answers 503 unavailable until the agent has enrolled', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const agent = new Agent(agentOptions({ server: `http://127.0.0.1:${port}`, registrationKey: 'fpr_x', stateDir: await env.stateDir() }), { logger: pino({ level: 'silent' }) });
    const stop = new AbortController();
    const running = agent.run(stop.signal);
    try {
      const localPort = await until(() => agent.localPort, 'the local API listening');
      for (const [method, path] of [['GET', AGENT_LOCAL_ROUTES.status], ['POST', AGENT_LOCAL_ROUTES.forceSync]] as const) {
        const res = await localJson(localPort, method, path);
        expect(res).toMatchObject({ status: 503, body: { error: { code: 'unavailable', message: expect.stringMatching(/enrolling/) } } });
      }
    } finally {
      stop.abort();
      await running;
    }
  });
});

describe('enrolling with only a registration key', () => {
  it('enrolls in the organization the key belongs to, and a later start checks nothing more', async () => {
    const { org, key } = await orgWithKey(env.admin, 'no-org');
    const { org: otherOrg } = await orgWithKey(env.admin, 'no-org-other');
    const dir = await env.stateDir();
    const a = await runAgent(agentOptions({ server: env.url, registrationKey: key, stateDir: dir }));
    const status = await until(async () => {
      const s = await localJson(a.localPort, 'GET', AGENT_LOCAL_ROUTES.status);
      return s.body['connected'] === true ? s.body : undefined;
    }, 'the agent watching');
    expect(status).toMatchObject({ organization_id: org, device_id: a.deviceId });
    expect((await env.admin.devices.get(org, a.deviceId)).organization_id).toBe(org);
    expect(await deviceCount(otherOrg)).toBe(0);
    expect((await new StateDir(dir).loadIdentity())?.organization_id).toBe(org);
    await a.stop();
  });

  it('refuses a key the server does not know, as enrollment does', async () => {
    const err = await runAgent(agentOptions({ server: env.url, registrationKey: 'fpr_unknown', stateDir: await env.stateDir() })).catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'enrollment_refused' });
  });
});
