/**
 * A CommandRunner that emulates the subset of `ip`, `wg`, `nft` and
 * `wireguard-go` the Linux dataplane uses, on an in-memory machine, and
 * records every call. Unknown commands fail the test loudly.
 */
import { readFileSync, statSync } from 'node:fs';
import { CommandError, type CommandResult, type CommandRunner, type RunOptions } from '../../../src/agent/dataplane/index.js';

export interface FakePeer {
  endpoint: string | null;
  allowed: string[];
  keepalive: number;
  /** Stands for the session: a peer that is removed and re-added loses it. */
  handshake: number;
}

export interface FakeInterface {
  privateKey: string | null;
  listenPort: number;
  mtu: number;
  up: boolean;
  addresses: string[];
  peers: Map<string, FakePeer>;
}

export interface Call {
  command: string;
  args: string[];
  input?: string;
  env?: Readonly<Record<string, string>>;
}

const MUTATING: readonly RegExp[] = [/^wg set/, /^ip (addr|link|route) (replace|add|del|set)/, /^nft -f/, /^wireguard-go/, /^sysctl -w/];

export class FakeMachine implements CommandRunner {
  calls: Call[] = [];
  kernelWireGuard = false;
  iface: FakeInterface | null = null;
  /** Routes of proto 70 on the interface: destination → via. */
  routes = new Map<string, string | null>();
  nftTable: string | null = null;
  /** The kernel settings `sysctl` reads and writes (forwarding off at first). */
  sysctls = new Map<string, string>([
    ['net.ipv4.ip_forward', '0'],
    ['net.ipv6.conf.all.forwarding', '0'],
  ]);
  fail: ((command: string, args: readonly string[]) => boolean) | null = null;
  /** Paths `wg set … private-key` was given. */
  keyFiles: string[] = [];

  constructor(readonly name: string) {}

  /** Calls as `command arg…`, a temp file path replaced by `<file>`. */
  lines(): string[] {
    return this.calls.map((c) => [c.command, ...c.args].join(' ').replace(/\/\S*fleetplane-\S*/, '<file>'));
  }

  mutations(): string[] {
    return this.lines().filter((l) => MUTATING.some((m) => m.test(l)));
  }

  clearCalls(): void {
    this.calls = [];
  }

  run(command: string, args: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
    this.calls.push({
      command,
      args: [...args],
      ...(options.input === undefined ? {} : { input: options.input }),
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    try {
      if (this.fail?.(command, args)) throw this.error(command, args, 'injected failure');
      return Promise.resolve({ stdout: this.exec(command, [...args]), stderr: '' });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private error(command: string, args: readonly string[], message: string): CommandError {
    return new CommandError(command, args, 1, message);
  }

  private needIface(command: string, args: readonly string[]): FakeInterface {
    if (!this.iface) throw this.error(command, args, `Cannot find device "${this.name}"`);
    return this.iface;
  }

  private sysctl(args: readonly string[]): string {
    const [flag, setting = ''] = args;
    if (flag === '-n' && this.sysctls.has(setting)) return `${this.sysctls.get(setting)}\n`;
    const [key = '', value] = setting.split('=');
    if (flag === '-w' && this.sysctls.has(key) && value !== undefined) {
      this.sysctls.set(key, value);
      return `${key} = ${value}\n`;
    }
    throw this.error('sysctl', args, `sysctl: cannot stat /proc/sys/${key.replaceAll('.', '/')}: No such file or directory`);
  }

  private create(): void {
    this.iface = { privateKey: null, listenPort: 40000, mtu: 1420, up: false, addresses: [], peers: new Map() };
  }

  private exec(command: string, args: string[]): string {
    const line = [command, ...args].join(' ');
    const n = this.name;
    if (command === 'wg') return this.wg(args);
    if (command === 'wireguard-go' && line === `wireguard-go ${n}`) {
      if (this.iface) throw this.error(command, args, 'exists');
      this.create();
      return '';
    }
    if (command === 'nft') return this.nft(args);
    if (command === 'sysctl') return this.sysctl(args);
    if (command !== 'ip') throw new Error(`fake machine: unexpected command ${line}`);
    if (line === `ip link add dev ${n} type wireguard`) {
      if (!this.kernelWireGuard) throw new CommandError(command, args, 2, 'Error: Unknown device type.');
      this.create();
      return '';
    }
    if (line === `ip link show dev ${n}`) {
      this.needIface(command, args);
      return `9: ${n}: <POINTOPOINT,NOARP> mtu 1420\n`;
    }
    if (line === `ip link del dev ${n}`) {
      this.needIface(command, args);
      this.iface = null;
      this.routes.clear();
      return '';
    }
    if (line === `ip -j addr show dev ${n}`) {
      const i = this.needIface(command, args);
      const addrInfo = i.addresses.map((a) => {
        const [local, prefix] = a.split('/');
        return { family: 'inet', local, prefixlen: Number(prefix), scope: 'global' };
      });
      return JSON.stringify([{ ifname: n, flags: ['POINTOPOINT', 'NOARP', ...(i.up ? ['UP'] : [])], mtu: i.mtu, addr_info: addrInfo }]);
    }
    let m = /^ip addr (replace|del) (\S+) dev (\S+)$/.exec(line);
    if (m && m[3] === n) {
      const i = this.needIface(command, args);
      i.addresses = i.addresses.filter((a) => a !== m?.[2]);
      if (m[1] === 'replace') i.addresses.push(m[2] ?? '');
      return '';
    }
    m = /^ip link set dev (\S+) mtu (\d+) up$/.exec(line);
    if (m && m[1] === n) {
      const i = this.needIface(command, args);
      i.mtu = Number(m[2]);
      i.up = true;
      return '';
    }
    m = /^ip -([46]) -j route show table main dev (\S+) proto 70$/.exec(line);
    if (m && m[2] === n) {
      this.needIface(command, args);
      const v6 = m[1] === '6';
      const entries = [...this.routes.entries()]
        .filter(([dst]) => dst.includes(':') === v6)
        .map(([dst, via]) => ({ dst: dst.replace(/\/(32|128)$/, ''), ...(via === null ? {} : { gateway: via }) }));
      return entries.length === 0 ? '' : JSON.stringify(entries);
    }
    m = /^ip route replace (\S+)(?: via (\S+))? dev (\S+) proto 70$/.exec(line);
    if (m && m[3] === n) {
      this.needIface(command, args);
      this.routes.set(m[1] ?? '', m[2] ?? null);
      return '';
    }
    m = /^ip route del (\S+) dev (\S+) proto 70$/.exec(line);
    if (m && m[2] === n) {
      if (!this.routes.delete(m[1] ?? '')) throw this.error(command, args, 'No such process');
      return '';
    }
    throw new Error(`fake machine: unexpected command ${line}`);
  }

  private nft(args: string[]): string {
    if (args.join(' ') === 'list table inet fleetplane') {
      if (this.nftTable === null) throw this.error('nft', args, 'No such file or directory');
      return this.nftTable;
    }
    if (args[0] === '-f' && args.length === 2) {
      const text = readFileSync(args[1] ?? '', 'utf8');
      this.nftTable = text.includes('table inet fleetplane {') ? text : null;
      return '';
    }
    throw new Error(`fake machine: unexpected nft ${args.join(' ')}`);
  }

  private wg(args: string[]): string {
    const [verb, name, ...rest] = args;
    if (name !== this.name) throw new Error(`fake machine: wg on ${name}`);
    const i = this.needIface('wg', args);
    if (verb === 'show' && rest.join(' ') === 'dump') {
      const head = [i.privateKey ?? '(none)', '(none)', String(i.listenPort), 'off'].join('\t');
      const peers = [...i.peers.entries()].map(([pk, p]) =>
        [pk, '(none)', p.endpoint ?? '(none)', p.allowed.length ? p.allowed.join(',') : '(none)', p.handshake, 0, 0, p.keepalive || 'off'].join('\t'),
      );
      return `${[head, ...peers].join('\n')}\n`;
    }
    if (verb !== 'set') throw new Error(`fake machine: wg ${verb}`);
    let peer: FakePeer | null = null;
    for (let k = 0; k < rest.length; k++) {
      const word = rest[k];
      const value = rest[k + 1] ?? '';
      if (word === 'listen-port') (i.listenPort = Number(value)), k++;
      else if (word === 'private-key') {
        if ((statSync(value).mode & 0o777) !== 0o600) throw new Error('fake machine: key file is not 0600');
        this.keyFiles.push(value);
        i.privateKey = readFileSync(value, 'utf8').trim();
        k++;
      } else if (word === 'peer') {
        peer = i.peers.get(value) ?? { endpoint: null, allowed: [], keepalive: 0, handshake: 0 };
        i.peers.set(value, peer);
        k++;
      } else if (word === 'remove' && peer) {
        i.peers.delete(rest[k - 1] ?? '');
        peer = null;
      } else if (word === 'endpoint' && peer) (peer.endpoint = value), k++;
      else if (word === 'persistent-keepalive' && peer) (peer.keepalive = value === 'off' ? 0 : Number(value)), k++;
      else if (word === 'allowed-ips' && peer) {
        const ips = value.split(',').filter((x) => x !== '');
        // As in WireGuard, an allowed IP belongs to one peer: taking it removes it from the others.
        for (const other of i.peers.values()) if (other !== peer) other.allowed = other.allowed.filter((a) => !ips.includes(a));
        peer.allowed = ips;
        k++;
      } else throw new Error(`fake machine: wg set ${rest.join(' ')}`);
    }
    return '';
  }
}
