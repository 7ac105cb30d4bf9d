/**
 * The agent's STUN probe of its WireGuard port, for real: a `fleetplane serve`
 * on the lab's "internet" answers STUN on 3478 and 3479 and runs a WireGuard
 * peer (wireguard-go); behind an endpoint-independent NAT (mapping to ports
 * 20000-20999, so the public port is not the local one) and a symmetric one
 * (`masquerade fully-random`), a host runs wireguard-go on 51820 and probes
 * through the nftables SNAT onto that port. Needs root: runs in CI, skips
 * loudly elsewhere.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatMapping } from '../../src/agent/nat/index.js';
import { createNatLab, natLabAvailable, type LabNode, type NatLab } from '../support/nat-lab.js';
import { until } from './support/harness.js';
import { ensureBuilt, spawnFleetplane, spawnNode, waitForOutput, type Proc } from './support/processes.js';

const enabled = natLabAvailable('The STUN probe test', ['wg', 'wireguard-go', 'conntrack', 'ping'], 'iproute2 nftables wireguard-tools wireguard-go conntrack iputils-ping');

const WG_PORT = 51820;
const STUN_PORTS = [3478, 3479] as const;
const SERVER_TUNNEL_IP = '10.99.0.254';

/** Runs the probe inside `h`'s namespace (a socket lives in the namespace of the process that opens it). */
const PROBE_SOURCE = `
import pino from 'pino';
import { createExecRunner } from './dist/agent/dataplane/index.js';
import { WireguardPortProbe } from './dist/agent/nat/index.js';
const [server, a, b, wg] = process.argv.slice(1);
const probe = await WireguardPortProbe.open({ server, serverPorts: [Number(a), Number(b)], wireguardPort: Number(wg), runner: createExecRunner(), logger: pino({ level: 'warn' }) });
try {
  const first = await probe.discover();
  const again = await probe.discover();
  process.stdout.write(JSON.stringify({ first, again }) + '\\n');
} finally {
  await probe.close();
}
`;

describe.runIf(enabled)('the STUN probe of the WireGuard port behind NATs (network namespaces, wireguard-go)', () => {
  let lab: NatLab;
  let server: Proc | undefined;
  let work = '';
  const keys = new Map<string, { priv: string; pub: string }>();
  const wgName = new Map<string, string>();

  async function keyPair(node: LabNode): Promise<{ priv: string; pub: string }> {
    const priv = (await node.run.run('wg', ['genkey'])).stdout.trim();
    const pub = (await node.run.run('wg', ['pubkey'], { input: `${priv}\n` })).stdout.trim();
    return { priv, pub };
  }

  /** wireguard-go on WG_PORT in `node`'s namespace, with `ip` on the tunnel. */
  async function wireguard(node: LabNode, ip: string): Promise<void> {
    const name = lab.interfaceName();
    wgName.set(node.name, name);
    spawnForeground(node, name);
    await until(async () => (await node.run.run('ip', ['link', 'show', name]).then(() => true, () => false)), `${name} to appear`, 10_000);
    const pair = await keyPair(node);
    keys.set(node.name, pair);
    const keyFile = join(work, `${name}.key`);
    await writeFile(keyFile, `${pair.priv}\n`, { mode: 0o600 });
    await node.run.run('wg', ['set', name, 'private-key', keyFile, 'listen-port', String(WG_PORT)]);
    await node.run.run('ip', ['addr', 'add', `${ip}/24`, 'dev', name]);
    await node.run.run('ip', ['link', 'set', name, 'up']);
  }

  function spawnForeground(node: LabNode, name: string): void {
    // The lab kills what runs in its namespaces when it is destroyed.
    const [file = 'ip', ...args] = [...node.prefix, 'wireguard-go', '-f', name];
    spawn(file, args, { stdio: 'ignore' }).on('error', (err) => process.stderr.write(`wireguard-go ${name}: ${String(err)}\n`));
  }

  async function serverSees(host: LabNode): Promise<string | undefined> {
    const out = await lab.server.run.run('wg', ['show', wgName.get('server') ?? '', 'endpoints']);
    const line = out.stdout.split('\n').find((l) => l.startsWith(keys.get(host.name)?.pub ?? '-'));
    const endpoint = line?.split('\t')[1];
    return endpoint && endpoint !== '(none)' ? endpoint : undefined;
  }

  /** Brings up `host`'s WireGuard to the server's, and waits until a ping crosses the tunnel. */
  async function tunnelUp(host: LabNode, tunnelIp: string): Promise<void> {
    await wireguard(host, tunnelIp);
    const srv = wgName.get('server') ?? '';
    await lab.server.run.run('wg', ['set', srv, 'peer', keys.get(host.name)?.pub ?? '', 'allowed-ips', `${tunnelIp}/32`]);
    await host.run.run('wg', ['set', wgName.get(host.name) ?? '', 'peer', keys.get('server')?.pub ?? '', 'endpoint', `${lab.server.ip}:${WG_PORT}`, 'allowed-ips', `${SERVER_TUNNEL_IP}/32`, 'persistent-keepalive', '1']);
    await until(() => host.run.run('ping', ['-n', '-c', '1', '-W', '1', SERVER_TUNNEL_IP]).then(() => true, () => false), `${host.name} to ping the server over WireGuard`, 30_000);
  }

  async function probe(host: LabNode): Promise<{ first: NatMapping; again: NatMapping }> {
    const p = spawnNode(['--input-type=module', '-e', PROBE_SOURCE, lab.server.ip, String(STUN_PORTS[0]), String(STUN_PORTS[1]), String(WG_PORT)], { prefix: host.prefix });
    const exit = await p.exit;
    expect(exit.code, p.output()).toBe(0);
    return JSON.parse(p.output().trim().split('\n').at(-1) ?? '') as { first: NatMapping; again: NatMapping };
  }

  beforeAll(async () => {
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'fp-stun-'));
    lab = await createNatLab({
      nats: [
        { name: 'eim', kind: 'endpoint-independent', hosts: ['h1'], udpPorts: [20000, 20999] },
        { name: 'sym', kind: 'symmetric', hosts: ['h2'] },
      ],
    });
    server = spawnFleetplane(
      'serve',
      ['--memory', '--host', lab.server.ip, '--port', '8080', '--stun-port', String(STUN_PORTS[0]), '--stun-alt-port', String(STUN_PORTS[1]), '--log-level', 'info'],
      { prefix: lab.server.prefix },
    );
    await waitForOutput(server, /listening on/, 90_000);
    expect(server.output()).toContain(`"stun":{"port":${STUN_PORTS[0]},"altPort":${STUN_PORTS[1]}}`);
    await wireguard(lab.server, SERVER_TUNNEL_IP);
  }, 180_000);

  afterAll(async () => {
    await server?.stop(5_000);
    await lab?.destroy();
    if (work) await rm(work, { recursive: true, force: true });
  }, 60_000);

  it('behind an endpoint-independent NAT: the mapping found is the one WireGuard traffic gets, and symmetric is false', async () => {
    const h1 = lab.host('h1');
    await tunnelUp(h1, '10.99.0.1');
    const seen = await until(() => serverSees(h1), 'the server to see h1\'s WireGuard endpoint');
    const { first, again } = await probe(h1);
    expect(first.endpoint).toBe(seen);
    expect(seen).toMatch(new RegExp(`^${lab.nat('eim').ip.replace(/\./g, '\\.')}:20\\d{3}$`));
    expect(first.symmetric).toBe(false);
    expect(again).toEqual(first);
    // WireGuard kept its port and its path through the probe.
    expect(await h1.run.run('ping', ['-n', '-c', '1', '-W', '2', SERVER_TUNNEL_IP]).then(() => true, () => false)).toBe(true);
    expect(await serverSees(h1)).toBe(seen);
  }, 90_000);

  it('behind `masquerade fully-random` (symmetric): the two STUN ports see different mappings, and symmetric is true', async () => {
    const h2 = lab.host('h2');
    await tunnelUp(h2, '10.99.0.2');
    const { first } = await probe(h2);
    expect(first.symmetric).toBe(true);
    expect(first.observed.map((a) => a.address)).toEqual([lab.nat('sym').ip, lab.nat('sym').ip]);
    expect(first.observed[0]?.port).not.toBe(first.observed[1]?.port);
  }, 90_000);
});
