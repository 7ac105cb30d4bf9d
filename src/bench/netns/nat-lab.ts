/**
 * A NAT lab in network namespaces, for tests and benchmarks of what agents
 * do behind NATs.
 *
 *   public hosts ─┐                      ┌─ NAT router ── lan0 ── hosts
 *   (the server)  ├─ br0 ("internet") ───┤   (wan0, nftables masquerade)
 *                 │   203.0.113.0/24      └─ NAT router ── lan0 ── hosts
 *
 * Every name is unique per lab (namespaces, and interface names handed out by
 * `interfaceName`, which wireguard-go's machine-wide UAPI sockets need), so
 * labs of concurrent test files never meet. Each NAT router drops what its
 * LAN did not ask for, as home routers do: without that, a peer's early
 * packet creates a conntrack entry and Linux then remaps the outgoing port,
 * which breaks the endpoint-independent case. Needs root and NAT_LAB_TOOLS
 * (the tests check with test/support/nat-lab.ts `natLabAvailable`, the
 * relay benchmark with its own check). `destroy()` kills whatever runs in
 * the lab's namespaces (only things its user started there) and deletes
 * them; a lab a killed run left behind is swept by the next lab made on
 * this machine.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createExecRunner, type CommandRunner } from '../../agent/dataplane/index.js';

/** `endpoint-independent`: one public port per private address and port, whatever the destination. `symmetric`: a new random one per destination. */
export type NatKind = 'endpoint-independent' | 'symmetric';

export interface NatSpec {
  /** Short name (a-z, 0-9; unique in the lab). */
  name: string;
  kind: NatKind;
  /** Names of the hosts on its LAN (a-z, 0-9; unique in the lab). */
  hosts: readonly string[];
  /** UDP source ports the NAT maps to (`masquerade to :from-to`); default: Linux's choice. */
  udpPorts?: readonly [number, number];
}

export interface NatLabOptions {
  nats: readonly NatSpec[];
  /** Public hosts on the "internet" besides `server` (e.g. a second replica). */
  publicHosts?: readonly string[];
}

/** A namespace with one address, and ways to run things in it. */
export interface LabNode {
  name: string;
  /** The network namespace. */
  ns: string;
  /** Its address: public on the internet, private on a LAN. */
  ip: string;
  /** Runs a command inside the namespace (10 s limit). */
  run: CommandRunner;
  /** `ip netns exec <ns>`: prefix a spawned command with it to run it inside. */
  prefix: readonly string[];
}

export interface LabNat extends LabNode {
  kind: NatKind;
  /** Its address on the LAN (the hosts' gateway). */
  lanIp: string;
  hosts: readonly LabNode[];
  /** Replaces the NAT's rules (flows it already tracks keep their mappings until forgotten). */
  setKind(kind: NatKind, udpPorts?: readonly [number, number]): Promise<void>;
  /** Forgets every flow it tracks (conntrack -F), as a NAT reboot does. Needs `conntrack`. */
  forgetFlows(): Promise<void>;
}

export interface NatLab {
  /** The public host named `server`. */
  readonly server: LabNode;
  publicHost(name: string): LabNode;
  nat(name: string): LabNat;
  host(name: string): LabNode;
  /** An interface name (≤ 15 characters) no other lab on this machine uses; removed with the lab where it leaves a file (wireguard-go's socket). */
  interfaceName(): string;
  /** Kills what runs in the lab, deletes its namespaces. Throws (after trying everything) if something could not be removed. */
  destroy(): Promise<void>;
}

const INTERNET_PREFIX = '203.0.113';
const LAB_PREFIX = 'fpl-';
/** Commands the lab itself runs (packages iproute2, nftables). */
export const NAT_LAB_TOOLS: readonly string[] = ['ip', 'nft'];

const host = createExecRunner({ timeoutMs: 10_000 });
const nsPrefix = (ns: string): string[] => ['ip', 'netns', 'exec', ns];

/** Builds the lab; on failure removes whatever it had made and rethrows. */
export async function createNatLab(opts: NatLabOptions): Promise<NatLab> {
  await sweepStaleLabs();
  const tag = `${process.pid.toString(36)}-${randomBytes(3).toString('hex')}`;
  let counter = 0;
  const unique = (): string => `fp${tag.slice(-6)}${(counter++).toString(36)}`;
  const namespaces: string[] = [];
  const interfaces: string[] = [];
  const destroy = async (): Promise<void> => {
    process.off('exit', destroyOnExit);
    const problems: string[] = [];
    for (const ns of namespaces) {
      for (const pid of await nsPids(ns)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') problems.push(`kill ${pid}: ${String(err)}`);
        }
      }
    }
    for (const ns of namespaces.splice(0).reverse()) await host.run('ip', ['netns', 'del', ns]).catch((err: unknown) => problems.push(String(err)));
    for (const name of interfaces) await rm(`/var/run/wireguard/${name}.sock`, { force: true }).catch((err: unknown) => problems.push(String(err)));
    if (problems.length > 0) throw new Error(`the NAT lab was not removed cleanly: ${problems.join('; ')}`);
  };
  // A test runner that exits without running afterAll: remove the namespaces anyway (synchronously, as 'exit' requires).
  const destroyOnExit = (): void => {
    for (const ns of namespaces) removeNamespaceSync(ns);
  };
  process.on('exit', destroyOnExit);

  const addNamespace = async (role: string): Promise<string> => {
    const ns = `${LAB_PREFIX}${tag}-${role}`;
    await host.run('ip', ['netns', 'add', ns]);
    namespaces.push(ns);
    await host.run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    return ns;
  };
  /** A veth pair from `a` (named `aName` there) to `b` (named `bName`), both up. */
  const link = async (a: string, aName: string, b: string, bName: string): Promise<void> => {
    const [ta, tb] = [unique(), unique()];
    await host.run('ip', ['link', 'add', ta, 'netns', a, 'type', 'veth', 'peer', 'name', tb, 'netns', b]);
    await host.run('ip', ['-n', a, 'link', 'set', ta, 'name', aName]);
    await host.run('ip', ['-n', b, 'link', 'set', tb, 'name', bName]);
    await host.run('ip', ['-n', a, 'link', 'set', aName, 'up']);
  };
  const node = (name: string, ns: string, ip: string): LabNode => ({
    name,
    ns,
    ip,
    run: createExecRunner({ prefix: nsPrefix(ns), timeoutMs: 10_000 }),
    prefix: nsPrefix(ns),
  });

  try {
    const internet = await addNamespace('inet');
    await host.run('ip', ['-n', internet, 'link', 'add', 'br0', 'type', 'bridge']);
    await host.run('ip', ['-n', internet, 'link', 'set', 'br0', 'up']);
    let port = 0;
    const attach = async (ns: string, ip: string): Promise<void> => {
      const bridgePort = `port${port++}`;
      await link(ns, 'eth0', internet, bridgePort);
      await host.run('ip', ['-n', internet, 'link', 'set', bridgePort, 'master', 'br0', 'up']);
      await host.run('ip', ['-n', ns, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
    };

    const publics = new Map<string, LabNode>();
    for (const [i, name] of ['server', ...(opts.publicHosts ?? [])].entries()) {
      const ns = await addNamespace(`pub-${name}`);
      const ip = `${INTERNET_PREFIX}.${i + 1}`;
      await attach(ns, ip);
      publics.set(name, node(name, ns, ip));
    }

    const nats = new Map<string, LabNat>();
    const hosts = new Map<string, LabNode>();
    for (const [i, spec] of opts.nats.entries()) {
      const ns = await addNamespace(`nat-${spec.name}`);
      const wanIp = `${INTERNET_PREFIX}.${101 + i}`;
      const lan = `192.168.${i + 1}`;
      const [tw, tn] = [unique(), unique()];
      await host.run('ip', ['link', 'add', tw, 'netns', ns, 'type', 'veth', 'peer', 'name', tn, 'netns', internet]);
      await host.run('ip', ['-n', ns, 'link', 'set', tw, 'name', 'wan0']);
      await host.run('ip', ['-n', ns, 'link', 'set', 'wan0', 'up']);
      await host.run('ip', ['-n', ns, 'addr', 'add', `${wanIp}/24`, 'dev', 'wan0']);
      const bridgePort = `port${port++}`;
      await host.run('ip', ['-n', internet, 'link', 'set', tn, 'name', bridgePort]);
      await host.run('ip', ['-n', internet, 'link', 'set', bridgePort, 'master', 'br0', 'up']);
      await host.run('ip', ['-n', ns, 'link', 'add', 'lan0', 'type', 'bridge']);
      await host.run('ip', ['-n', ns, 'addr', 'add', `${lan}.1/24`, 'dev', 'lan0']);
      await host.run('ip', ['-n', ns, 'link', 'set', 'lan0', 'up']);
      await host.run('ip', ['netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
      const lanHosts: LabNode[] = [];
      for (const [j, name] of spec.hosts.entries()) {
        const hns = await addNamespace(`host-${name}`);
        const ip = `${lan}.${10 + j}`;
        const lanPort = `lan0p${j}`;
        await link(hns, 'eth0', ns, lanPort);
        await host.run('ip', ['-n', ns, 'link', 'set', lanPort, 'master', 'lan0', 'up']);
        await host.run('ip', ['-n', hns, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
        await host.run('ip', ['-n', hns, 'route', 'add', 'default', 'via', `${lan}.1`]);
        const h = node(name, hns, ip);
        lanHosts.push(h);
        hosts.set(name, h);
      }
      const base = node(spec.name, ns, wanIp);
      const nat: LabNat = {
        ...base,
        kind: spec.kind,
        lanIp: `${lan}.1`,
        hosts: lanHosts,
        async setKind(kind, udpPorts) {
          await base.run.run('nft', ['-f', '-'], { input: natRuleset(kind, udpPorts) });
          nat.kind = kind;
        },
        async forgetFlows() {
          await base.run.run('conntrack', ['-F']);
        },
      };
      await nat.setKind(spec.kind, spec.udpPorts);
      nats.set(spec.name, nat);
    }

    const get = <T>(map: Map<string, T>, what: string, name: string): T => {
      const v = map.get(name);
      if (v === undefined) throw new Error(`the NAT lab has no ${what} named ${name}`);
      return v;
    };
    return {
      server: get(publics, 'public host', 'server'),
      publicHost: (name) => get(publics, 'public host', name),
      nat: (name) => get(nats, 'NAT', name),
      host: (name) => get(hosts, 'host', name),
      interfaceName() {
        const name = unique();
        interfaces.push(name);
        return name;
      },
      destroy,
    };
  } catch (err) {
    await destroy().catch((cleanupErr: unknown) => process.stderr.write(`${String(cleanupErr)}\n`));
    throw err;
  }
}

/**
 * The router's rules: masquerade on wan0 (`fully-random`: a new random port
 * per flow, i.e. symmetric), and input/forward chains that let in only the
 * LAN and replies to it.
 */
function natRuleset(kind: NatKind, udpPorts: readonly [number, number] | undefined): string {
  const random = kind === 'symmetric' ? ' fully-random' : '';
  const udpRange = udpPorts ? `    oifname "wan0" meta l4proto udp masquerade to :${udpPorts[0]}-${udpPorts[1]}${random}\n` : '';
  return `flush ruleset
table ip lab_nat {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
${udpRange}    oifname "wan0" masquerade${random}
  }
}
table inet lab_filter {
  chain input {
    type filter hook input priority filter; policy drop;
    ct state established,related accept
    iifname { "lo", "lan0" } accept
  }
  chain forward {
    type filter hook forward priority filter; policy drop;
    ct state established,related accept
    iifname "lan0" accept
  }
}
`;
}

async function nsPids(ns: string): Promise<number[]> {
  const out = await host.run('ip', ['netns', 'pids', ns]).catch((err: unknown) => {
    // The namespace may be gone already; say so rather than hide why its processes were left.
    process.stderr.write(`NAT lab: could not list the processes of ${ns}: ${String(err)}\n`);
    return { stdout: '' };
  });
  return out.stdout.split(/\s+/).filter((p) => p !== '').map(Number);
}

function removeNamespaceSync(ns: string): void {
  try {
    const pids = execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split(/\s+/).filter((p) => p !== '');
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') process.stderr.write(`NAT lab: could not kill ${pid}: ${String(err)}\n`);
      }
    }
    execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  } catch (err) {
    process.stderr.write(`NAT lab: could not remove namespace ${ns}: ${String(err)}\n`);
  }
}

/** Namespaces of labs whose test process is gone (killed before its cleanup ran). */
async function sweepStaleLabs(): Promise<void> {
  const out = await host.run('ip', ['netns', 'list']);
  for (const line of out.stdout.split('\n')) {
    const ns = line.split(' ')[0] ?? '';
    const m = new RegExp(`^${LAB_PREFIX}([0-9a-z]+)-[0-9a-f]{6}-`).exec(ns);
    if (!m?.[1] || processAlive(parseInt(m[1], 36))) continue;
    process.stderr.write(`NAT lab: removing ${ns}, left behind by process ${parseInt(m[1], 36)}\n`);
    removeNamespaceSync(ns);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
