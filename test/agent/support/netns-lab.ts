/**
 * The pieces the network-namespace tests share: whether they can run here
 * (root and the tools; loud when not, a failure in CI), commands inside a
 * namespace, the underlay (a bridge in the server's namespace, a veth pair
 * per agent) and the cleanup of everything a test started.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandError, createExecRunner, type CommandRunner } from '../../../src/agent/dataplane/index.js';
import { IN_CI, requireBinary, which } from '../../support/binaries.js';
import { FleetplaneClient } from '../../../src/client/index.js';
import { spawnFleetplane, spawnNode, waitForOutput, type Proc } from './processes.js';
import { FORWARDER_SOURCE, unixSocketFetch } from './unix-fetch.js';

export const host = createExecRunner();

/** Whether `what` can run: the tools exist (else requireBinary's message) and this is root (else loud; a failure in CI). */
export function netnsTestEnabled(what: string, tools: readonly string[], packages: string): boolean {
  if (!requireBinary(`${tools.join(', ')} (${packages})`, tools.every((t) => which(t) !== undefined))) return false;
  if (process.getuid?.() === 0) return true;
  const msg = `\n*** ${what} (network namespaces, WireGuard, nftables) needs root. ***\n`;
  if (IN_CI) throw new Error(msg);
  process.stderr.write(`${msg}*** Skipping it because this is not CI. ***\n`);
  return false;
}

export function inNamespace(ns: string): CommandRunner {
  return createExecRunner({ prefix: ['ip', 'netns', 'exec', ns], timeoutMs: 10_000 });
}

/** Whether `ip` answers a ping from `ns` within `attempts` one-second tries. */
export async function pingsFrom(ns: string, ip: string, attempts: number): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    try {
      await inNamespace(ns).run('ping', ['-n', '-c', '1', '-W', '1', ip]);
      return true;
    } catch (error) {
      if (!(error instanceof CommandError)) throw error;
    }
  }
  return false;
}

/** Whether a TCP connect from `ns` to ip:port succeeds within 1.5 s, in `attempts` tries. */
export async function connectsFrom(ns: string, ip: string, port: number, attempts = 1): Promise<boolean> {
  const src = `const s=require('node:net').connect({host:${JSON.stringify(ip)},port:${port}});s.setTimeout(1500);s.on('connect',()=>process.exit(0));s.on('timeout',()=>process.exit(2));s.on('error',()=>process.exit(3));`;
  for (let i = 0; i < attempts; i++) {
    try {
      await inNamespace(ns).run(process.execPath, ['-e', src]);
      return true;
    } catch (error) {
      if (!(error instanceof CommandError)) throw error;
    }
  }
  return false;
}

/**
 * `node -e` source of a TCP listener on `port` that prints `listening`,
 * then `from <address>` per connection. A client that exits at once resets
 * its connection: the listener ignores that, so it outlives every connect.
 */
export function tcpListenerSource(port: number): string {
  return `require('node:net').createServer((s)=>{s.on('error',()=>{});process.stdout.write('from '+s.remoteAddress+'\\n');s.end('hi')}).listen(${port},'0.0.0.0',()=>process.stdout.write('listening\\n'))`;
}

/** One agent's side of the underlay: its namespace, its veth pair's two names, its address (/24). */
export interface UnderlaySide {
  ns: string;
  vethAgent: string;
  vethBridge: string;
  ip: string;
}

/** Makes the namespaces, a bridge holding `serverIp/24` in `serverNs`, and a veth pair from each side into it. */
export async function buildUnderlay(serverNs: string, serverIp: string, sides: readonly UnderlaySide[], more: readonly string[] = []): Promise<void> {
  for (const ns of [serverNs, ...sides.map((s) => s.ns), ...more]) await host.run('ip', ['netns', 'add', ns]);
  await host.run('ip', ['-n', serverNs, 'link', 'add', 'br0', 'type', 'bridge']);
  await host.run('ip', ['-n', serverNs, 'addr', 'add', `${serverIp}/24`, 'dev', 'br0']);
  await host.run('ip', ['-n', serverNs, 'link', 'set', 'br0', 'up']);
  await host.run('ip', ['-n', serverNs, 'link', 'set', 'lo', 'up']);
  for (const side of sides) {
    await host.run('ip', ['link', 'add', side.vethAgent, 'netns', side.ns, 'type', 'veth', 'peer', 'name', side.vethBridge, 'netns', serverNs]);
    await host.run('ip', ['-n', serverNs, 'link', 'set', side.vethBridge, 'master', 'br0', 'up']);
    await host.run('ip', ['-n', side.ns, 'addr', 'add', `${side.ip}/24`, 'dev', side.vethAgent]);
    await host.run('ip', ['-n', side.ns, 'link', 'set', side.vethAgent, 'up']);
    await host.run('ip', ['-n', side.ns, 'link', 'set', 'lo', 'up']);
  }
}

async function namespacePids(ns: string): Promise<number[]> {
  const out = await host.run('ip', ['netns', 'pids', ns]).catch(() => ({ stdout: '' }));
  return out.stdout.split(/\s+/).filter((p) => p !== '').map(Number);
}

/**
 * Stops `procs`, then `server`, kills whatever still runs in `namespaces`
 * (started by the test: a wireguard-go, a listener), removes the
 * WireGuard sockets of `interfaces` and the namespaces. Problems are
 * printed under `label`, not thrown: the cleanup goes on.
 */
export async function tearDownLab(label: string, namespaces: readonly string[], interfaces: readonly string[], procs: readonly Proc[], server: Proc | undefined): Promise<void> {
  const problems: unknown[] = [];
  await Promise.all(procs.map((p) => p.stop(5_000)));
  await server?.stop(5_000);
  for (const ns of namespaces) {
    for (const pid of await namespacePids(ns)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        problems.push(error);
      }
    }
  }
  for (const wg of interfaces) await rm(`/var/run/wireguard/${wg}.sock`, { force: true }).catch((e: unknown) => problems.push(e));
  for (const ns of namespaces) await host.run('ip', ['netns', 'del', ns]).catch((e: unknown) => problems.push(e));
  if (problems.length > 0) process.stderr.write(`${label} cleanup problems: ${problems.map(String).join('; ')}\n`);
}

/** What `linuxAgentArgs` needs: where the server is, how to enroll, and the WireGuard side of the agent. */
export interface LinuxAgentSpec {
  server: string;
  org: string;
  registrationKey: string;
  stateDir: string;
  hostname: string;
  wgInterface: string;
  listenPort: number;
  /** ADDR:PORT peers reach it at. */
  endpoint: string;
}

/** The arguments of `fleetplane agent` with the linux dataplane, as the namespace tests run it (statuses every 2 s, cleanup on exit). */
export function linuxAgentArgs(a: LinuxAgentSpec, more: readonly string[] = []): string[] {
  return [
    '--server', a.server,
    '--org', a.org,
    '--registration-key', a.registrationKey,
    '--state-dir', a.stateDir,
    '--hostname', a.hostname,
    '--dataplane', 'linux',
    '--interface', a.wgInterface,
    '--listen-port', String(a.listenPort),
    '--endpoint', a.endpoint,
    '--status-interval', '2',
    '--resync-interval', '60',
    '--cleanup-on-exit',
    ...more,
  ];
}

/** A server running in a namespace, and the admin client that reaches it from the test (through a unix-socket forwarder). */
export interface LabServer {
  server: Proc;
  forwarder: Proc;
  admin: FleetplaneClient;
}

/**
 * Starts `fleetplane serve --memory` in `ns` on ip:port with admin token
 * `adminToken` (and `more` arguments), and a forwarder in `ns` from a
 * socket in `workDir`, so the test (outside every namespace) can call it.
 */
export async function startLabServer(ns: string, ip: string, port: number, adminToken: string, workDir: string, more: readonly string[] = []): Promise<LabServer> {
  const prefix = ['ip', 'netns', 'exec', ns];
  const server = spawnFleetplane('serve', ['--memory', '--host', ip, '--port', String(port), '--admin-token', adminToken, '--log-level', 'warn', ...more], { prefix });
  await waitForOutput(server, /listening on/, 90_000);
  const socket = join(workDir, 'server.sock');
  const forwarder = spawnNode(['-e', FORWARDER_SOURCE, socket, ip, String(port)], { prefix });
  await waitForOutput(forwarder, /forwarding/);
  return { server, forwarder, admin: new FleetplaneClient({ baseUrl: `http://${ip}:${port}`, token: adminToken, fetch: unixSocketFetch(socket) }) };
}
