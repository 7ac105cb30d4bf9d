/**
 * The UDP socket buffers in effect on a relayed agent: the kernel's caps in
 * its namespace, and what its relay proxy socket and WireGuard's socket got
 * (`ss -m`: rb/tb are what the kernel granted, twice what was asked within
 * the cap, the other half being its bookkeeping allowance), and what each
 * socket dropped.
 */
import { RELAY_SOCKET_BUFFER_BYTES } from '../../agent/paths/relay-proxies.js';
import type { RelayHost } from './relay-lab.js';
import { WG_PORT } from './relay-lab.js';

export interface SocketBuffers {
  host: string;
  /** What the agent's relay proxy asks for, each way. */
  requestedBytes: number;
  rmemMax: number;
  wmemMax: number;
  rmemDefault: number;
  wmemDefault: number;
  /** The relay proxy socket WireGuard sends the peer's packets to (`127.0.0.1:<port>`), as `ss -m` shows it. */
  proxy: UdpSocket | undefined;
  /** wireguard-go's own UDP socket(s) on the listen port. */
  wireguard: UdpSocket[];
}

async function sysctl(h: RelayHost, name: string): Promise<number> {
  return Number((await h.node.run.run('sysctl', ['-n', name])).stdout.trim());
}

/** One UDP socket as `ss -u -a -n -m` shows it: local address, the buffers the kernel granted, and what it dropped (sk_drops). */
export interface UdpSocket {
  local: string;
  rcvbuf: number;
  sndbuf: number;
  drops: number;
}

/** Every UDP socket in `h`'s namespace. */
export async function udpSockets(h: RelayHost): Promise<UdpSocket[]> {
  const out: UdpSocket[] = [];
  let local: string | undefined;
  for (const line of (await h.node.run.run('ss', ['-u', '-a', '-n', '-m'])).stdout.split('\n')) {
    const skmem = /skmem:\(r\d+,rb(\d+),t\d+,tb(\d+),.*,d(\d+)\)/.exec(line);
    if (skmem && local !== undefined) {
      out.push({ local, rcvbuf: Number(skmem[1]), sndbuf: Number(skmem[2]), drops: Number(skmem[3]) });
      local = undefined;
      continue;
    }
    const cols = line.trim().split(/\s+/);
    // State Recv-Q Send-Q Local:Port Peer:Port
    if (cols.length >= 5 && /^\d+$/.test(cols[1] ?? '')) local = cols[3];
  }
  return out;
}

/** Whether a socket is WireGuard's own (its listen port). */
export const isWireguardSocket = (s: UdpSocket): boolean => s.local.endsWith(`:${WG_PORT}`);

/** Reads them on `h`, whose WireGuard sends its peer's packets to `proxyEndpoint` (127.0.0.1:port). */
export async function socketBuffers(h: RelayHost, proxyEndpoint: string | null): Promise<SocketBuffers> {
  const sockets = await udpSockets(h);
  return {
    host: h.name,
    requestedBytes: RELAY_SOCKET_BUFFER_BYTES,
    rmemMax: await sysctl(h, 'net.core.rmem_max'),
    wmemMax: await sysctl(h, 'net.core.wmem_max'),
    rmemDefault: await sysctl(h, 'net.core.rmem_default'),
    wmemDefault: await sysctl(h, 'net.core.wmem_default'),
    proxy: sockets.find((s) => s.local === proxyEndpoint),
    wireguard: sockets.filter(isWireguardSocket),
  };
}
