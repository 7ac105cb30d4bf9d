/**
 * 50 agents as real processes (`fleetplane agent --dataplane render`) against
 * a real server process: they converge after a burst of 200 changes, their
 * rendered files are exactly what the desired state of the server's final
 * lists renders to, and /convergence reports every one at the head.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeDesiredState, generateKeyPair, renderNftables, renderWireGuard, NFTABLES_CONF_FILE, WIREGUARD_CONF_FILE } from '../../src/agent/dataplane/index.js';
import { IDENTITY_FILE, PRIVATE_KEY_FILE, type DeviceIdentity } from '../../src/agent/index.js';
import { FleetplaneClient } from '../../src/client/index.js';
import type { Convergence, Rule } from '../../src/protocol/index.js';
import { localJson, tempDir, until } from './support/harness.js';
import { ensureBuilt, spawnFleetplane, waitForOutput, type Proc } from './support/processes.js';

const AGENTS = 50;
const CHANGES = 200;
/**
 * How long each of the two waits for convergence may take. Alone, the whole
 * test takes about 57 s here; in the full suite its 50 agent processes share
 * 2 cores with other test files, and one run had 49 of 50 at the head at 90
 * s. A stuck agent still fails it, named with the end of its log.
 */
const DEADLINE_MS = 150_000;
const ADMIN = 'fpa_fleet_render_e2e';
/**
 * Between two polls of /convergence. `until` polls every 20 ms: for the minute the 50 agents take, that is
 * thousands of requests to the server they all wait on, on 2 cores shared with them.
 */
const POLL_MS = 250;
const pause = (): Promise<void> => new Promise((r) => setTimeout(r, POLL_MS));

interface AgentProc {
  proc: Proc;
  dir: string;
  index: number;
}

describe('50 agents in render mode, as real processes', () => {
  let server: Proc;
  let admin: FleetplaneClient;
  let url: string;
  let work: { path: string; remove: () => Promise<void> };
  const agents: AgentProc[] = [];

  beforeAll(async () => {
    ensureBuilt();
    work = await tempDir('fp-fleet-');
    server = spawnFleetplane(
      'serve',
      ['--memory', '--host', '127.0.0.1', '--port', '0', '--admin-token', ADMIN, '--log-level', 'warn', '--bookmark-interval', '1', '--stale-after', '120'],
      { nodeFlags: ['--max-old-space-size=512'] },
    );
    [, url = ''] = await waitForOutput(server, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 90_000);
    admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.proc.stop(5_000)));
    await server?.stop(10_000);
    await work?.remove();
  }, 60_000);

  it(
    'converge after a burst of 200 changes, render exactly the expected files, and all report the head',
    async () => {
      const org = await admin.organizations.create({ name: `fleet-${process.pid}` });
      const key = await admin.registrationKeys.create(org.id, { description: 'fleet', single_use: false });
      for (let i = 0; i < AGENTS; i++) {
        const dir = join(work.path, `agent-${i}`);
        const proc = spawnFleetplane(
          'agent',
          [
            '--server', url,
            '--org', org.id,
            '--state-dir', dir,
            '--hostname', `agent-${i}`,
            '--endpoint', `192.0.2.${i + 1}:${51820 + i}`,
            '--status-interval', '5',
            '--resync-interval', '60',
            '--log-level', 'info',
          ],
          {
            nodeFlags: ['--max-old-space-size=64', '--max-semi-space-size=2'],
            logFile: join(work.path, `agent-${i}.log`),
            env: { FLEETPLANE_AGENT_REGISTRATION_KEY: key.key },
          },
        );
        agents.push({ proc, dir, index: i });
      }
      let last: Convergence | undefined;
      // A deadline missed names the agents behind, with the end of their logs: a stuck agent and a loaded machine read apart.
      const progress = async (): Promise<string> => {
        const behind = (last?.not_converged ?? []).filter((d) => /^agent-\d+$/.test(d.hostname)).slice(0, 3);
        const logs = await Promise.all(
          behind.map(async (d) => {
            const text = await readFile(join(work.path, `${d.hostname}.log`), 'utf8').catch((err: unknown) => `(no log: ${String(err)})`);
            return `${d.hostname} (applied ${d.applied_revision ?? 'none'}, last seen ${d.last_seen ?? 'never'}):\n${text.split('\n').slice(-8).join('\n')}`;
          }),
        );
        return [JSON.stringify({ ...last, not_converged: last?.not_converged.length }), ...logs].join('\n');
      };
      const before = await until(async () => {
        await pause();
        const c = (last = await admin.convergence(org.id));
        return c.devices === AGENTS && c.at_head === AGENTS ? c : undefined;
      }, 'all agents enrolled and at the head', DEADLINE_MS).catch(async (err: unknown) => {
        throw new Error(`${String(err)}; last convergence ${await progress()}`);
      });

      // The burst: exactly 200 writes, each taking one revision.
      const deviceIds = (await admin.devices.list(org.id)).items.map((d) => d.id);
      const groups: string[] = [];
      const extras: string[] = [];
      const rule = (n: number): Rule => ({ ip_protocol: n % 2 ? 'tcp' : 'udp', from_port: 1000 + n, to_port: 1000 + n, ip_ranges: [`100.64.0.${(n % 200) + 1}`] });
      const writes: Array<() => Promise<unknown>> = [];
      for (let g = 0; g < 10; g++) writes.push(async () => groups.push((await admin.securityGroups.create(org.id, { description: `g${g}`, inbound_rules: [rule(g)], outbound_rules: [] })).id));
      for (let e = 0; e < 30; e++) writes.push(async () => extras.push((await admin.devices.create(org.id, { hostname: `extra-${e}`, public_key: generateKeyPair().publicKey, endpoints: [{ source: 'manual', address: `198.51.100.${e + 1}:51820` }] })).id));
      const sequence = async (list: Array<() => Promise<unknown>>, lanes: number) => {
        let next = 0;
        await Promise.all(Array.from({ length: lanes }, async () => {
          while (next < list.length) await list[next++]!();
        }));
      };
      await sequence(writes, 8);
      const more: Array<() => Promise<unknown>> = [];
      for (let i = 0; i < 50; i++) more.push(() => admin.devices.update(org.id, deviceIds[i % deviceIds.length]!, { security_group_id: groups[i % groups.length]! }));
      for (let i = 0; i < 40; i++) more.push(() => admin.devices.update(org.id, extras[i % extras.length]!, { advertise_cidrs: [`10.${i}.0.0/16`] }));
      for (let i = 0; i < 40; i++) more.push(() => admin.securityGroups.update(org.id, groups[i % groups.length]!, { inbound_rules: [rule(i + 100), rule(i + 300)], outbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] }] }));
      for (let i = 0; i < 20; i++) more.push(() => admin.organizations.update(org.id, { network: { mtu: 1300 + i, routes: [{ destination: `172.16.${i}.0/24` }] } }));
      await sequence(more, 8);
      const deletes: Array<() => Promise<unknown>> = [];
      for (let i = 0; i < 10; i++) deletes.push(() => admin.devices.delete(org.id, extras[i]!));
      await sequence(deletes, 8);
      expect(writes.length + more.length + deletes.length).toBe(CHANGES);
      const head = before.revision + CHANGES;

      const after = await until(async () => {
        await pause();
        const c = (last = await admin.convergence(org.id));
        return c.revision === head && c.at_head === AGENTS ? c : undefined;
      }, 'every agent at the head after the burst', DEADLINE_MS).catch(async (err: unknown) => {
        throw new Error(`${String(err)}; last convergence ${await progress()}`);
      });
      // The 20 remaining extra devices have no agent: they never reported, so they are stale.
      expect(after).toMatchObject({ devices: AGENTS + 20, at_head: AGENTS, behind: 0, error: 0, stale: 20 });
      expect(after.not_converged.every((d) => extras.includes(d.id))).toBe(true);

      // Expected files, from the server's final lists.
      const organization = await admin.organizations.get(org.id);
      const devices = (await admin.devices.list(org.id)).items;
      const securityGroups = (await admin.securityGroups.list(org.id)).items;
      for (const a of agents) {
        const identity = JSON.parse(await readFile(join(a.dir, IDENTITY_FILE), 'utf8')) as DeviceIdentity;
        const privateKey = (await readFile(join(a.dir, PRIVATE_KEY_FILE), 'utf8')).trim();
        const desired = computeDesiredState({ deviceId: identity.device_id, interfaceName: 'fleetplane0', privateKey, listenPort: 51820, organization, devices, securityGroups });
        expect(desired.peers).toHaveLength(AGENTS + 20 - 1);
        expect(await readFile(join(a.dir, WIREGUARD_CONF_FILE), 'utf8')).toBe(renderWireGuard(desired));
        expect(await readFile(join(a.dir, NFTABLES_CONF_FILE), 'utf8')).toBe(renderNftables(desired));
        expect(devices.find((d) => d.id === identity.device_id)?.endpoints).toEqual([{ source: 'manual', address: `192.0.2.${a.index + 1}:${51820 + a.index}` }]);
      }

      // The local API of a few agents agrees.
      for (const a of agents.slice(0, 3)) {
        const [, port] = await waitForOutput(a.proc, /"local_port":(\d+)/);
        const status = await localJson(Number(port), 'GET', '/status');
        expect(status.body).toMatchObject({ applied_revision: after.revision, apply_error: null, peers: AGENTS + 20 - 1, connected: true });
      }

      // SIGTERM: every agent shuts down cleanly (exit 0) and says it is offline.
      const exits = await Promise.all(agents.map((a) => a.proc.stop(15_000)));
      expect(exits.filter((e) => e.code !== 0)).toEqual([]);
      const offline = (await admin.devices.list(org.id)).items.filter((d) => deviceIds.includes(d.id) && d.status.online === false);
      expect(offline).toHaveLength(AGENTS);
    },
    3 * DEADLINE_MS,
  );
});
