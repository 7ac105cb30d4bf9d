/**
 * `--advertise-routes` against a real server (render dataplane, in this
 * process): the agent requests its routes at enrollment and sets the
 * request again at every start; once an admin approves a route, the other
 * agents route it into the tunnel to the router, and the router forwards
 * and masquerades it. A bad route stops the agent with exit code 2.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NFTABLES_CONF_FILE, WIREGUARD_CONF_FILE } from '../../src/agent/dataplane/index.js';
import { agentOptions, orgWithKey, runAgent, until, useAgentServer } from './support/harness.js';
import { ensureBuilt, spawnFleetplane } from './support/processes.js';

const env = useAgentServer('fp-routes-', ensureBuilt);

const file = (dir: string, name: string): Promise<string> => readFile(join(dir, name), 'utf8');

describe('the agent requests the routes of --advertise-routes', () => {
  it('at enrollment and at every start; peers route an approved one to it, and it masquerades what it forwards', async () => {
    const { org, key } = await orgWithKey(env.admin, 'routes');
    const routerDir = await env.stateDir();
    const peerDir = await env.stateDir();
    const routerOptions = agentOptions({ server: env.url, org, registrationKey: key, stateDir: routerDir, hostname: 'router', advertiseRoutes: ['10.20.0.0/16'] });
    let router = await runAgent(routerOptions);
    const peer = await runAgent(agentOptions({ server: env.url, org, registrationKey: key, stateDir: peerDir, hostname: 'peer', listenPort: 51821 }));
    const requested = (cidrs: string[]) =>
      until(async () => {
        const d = await env.admin.devices.get(org, router.deviceId);
        return JSON.stringify(d.advertise_cidrs) === JSON.stringify(cidrs) ? d : undefined;
      }, `the router to request ${cidrs.join(',') || 'nothing'}`);
    const atHead = (revision: number) =>
      until(async () => {
        const c = await env.admin.convergence(org);
        return c.revision >= revision && c.at_head === c.devices && c.devices === 2 ? c : undefined;
      }, `both agents at revision ${revision}`);

    // Sent at enrollment: the device holds the request before any PATCH.
    const enrolled = await requested(['10.20.0.0/16']);
    expect(enrolled.approved_cidrs).toEqual([]);
    await atHead(enrolled.revision);
    expect(await file(peerDir, WIREGUARD_CONF_FILE)).not.toContain('10.20.0.0/16');
    expect(await file(routerDir, NFTABLES_CONF_FILE)).not.toContain('chain forward');

    const approved = await env.admin.devices.update(org, router.deviceId, { approved_cidrs: ['10.20.0.0/16'] });
    await atHead(approved.revision);
    const conf = await file(peerDir, WIREGUARD_CONF_FILE);
    expect(conf).toContain('PostUp = ip route replace 10.20.0.0/16 dev %i');
    expect(conf).toMatch(/AllowedIPs = 100\.64\.0\.\d+\/32, 10\.20\.0\.0\/16\n/);
    const rules = await file(routerDir, NFTABLES_CONF_FILE);
    expect(rules).toContain('\t\tiifname "fp0" ip daddr 10.20.0.0/16 accept\n');
    expect(rules).toContain('\t\tiifname "fp0" ip daddr 10.20.0.0/16 masquerade\n');
    expect(await file(routerDir, WIREGUARD_CONF_FILE)).not.toContain('PostUp = ip route replace 10.20.0.0/16');

    // A later start with another flag changes the request; the approval stays, but routes nothing it no longer requests.
    await router.stop();
    router = await runAgent({ ...routerOptions, registrationKey: undefined, advertiseRoutes: ['10.30.0.0/24', '10.20.0.0/16'] });
    await requested(['10.30.0.0/24', '10.20.0.0/16']);
    await router.stop();
    router = await runAgent({ ...routerOptions, registrationKey: undefined, advertiseRoutes: [] });
    const cleared = await requested([]);
    expect(cleared.approved_cidrs).toEqual(['10.20.0.0/16']);
    await atHead(cleared.revision);
    expect(await file(peerDir, WIREGUARD_CONF_FILE)).not.toContain('10.20.0.0/16');
    expect(await file(routerDir, NFTABLES_CONF_FILE)).not.toContain('masquerade');
    await router.stop();
    await peer.stop();
  });

  it('an enrollment refused because its auto-approved route overlaps another device\'s stops the agent naming the route, not the key', async () => {
    const { org, key } = await orgWithKey(env.admin, 'overlap');
    await env.admin.organizations.update(org, { network: { auto_approve_cidrs: ['10.20.0.0/16'] } });
    const first = await runAgent(agentOptions({ server: env.url, org, registrationKey: key, stateDir: await env.stateDir(), hostname: 'r1', advertiseRoutes: ['10.20.0.0/24'] }));
    const refused = await runAgent(
      agentOptions({ server: env.url, org, registrationKey: key, stateDir: await env.stateDir(), hostname: 'r2', listenPort: 51821, advertiseRoutes: ['10.20.0.0/16'] }),
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ reason: 'enrollment_refused' });
    expect(String((refused as Error).message)).toContain('(check --advertise-routes)');
    expect(String((refused as Error).message)).not.toContain('public key');
    await first.stop();
  });

  it('a route with host bits set stops the agent before it enrolls: exit 2, saying what the route should be', async () => {
    const p = spawnFleetplane('agent', ['--state-dir', '/nonexistent', '--advertise-routes', '192.168.5.0/24,10.20.0.1/16']);
    expect((await p.exit).code).toBe(2);
    expect(p.output()).toContain('fleetplane agent: --advertise-routes: 10.20.0.1/16 has host bits set; expected 10.20.0.0/16');
  });
});
