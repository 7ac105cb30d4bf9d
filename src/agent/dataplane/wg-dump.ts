/**
 * Parsing `wg show <interface> dump`: one tab-separated line for the
 * interface, then one per peer (wg(8) "dump").
 */

export interface WgInterfaceState {
  /** Secret: never log it. Null when unset. */
  private_key: string | null;
  listen_port: number;
}

export interface WgPeerState {
  public_key: string;
  endpoint: string | null;
  allowed_ips: string[];
  /** Unix seconds; 0 = never. */
  latest_handshake: number;
  rx_bytes: number;
  tx_bytes: number;
  /** Seconds; 0 = off. */
  persistent_keepalive: number;
}

export interface WgDump {
  interface: WgInterfaceState;
  peers: WgPeerState[];
}

export class WgDumpParseError extends Error {
  override name = 'WgDumpParseError';
}

const NONE = '(none)';

function count(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new WgDumpParseError(`bad ${what} ${JSON.stringify(text)} in wg dump`);
  return n;
}

/** Throws WgDumpParseError on anything it doesn't recognise rather than guessing. */
export function parseWgDump(text: string): WgDump {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const first = lines[0];
  if (first === undefined) throw new WgDumpParseError('empty wg dump');
  const head = first.split('\t');
  if (head.length !== 4) throw new WgDumpParseError(`interface line has ${head.length} fields, expected 4`);
  const iface: WgInterfaceState = {
    private_key: head[0] === NONE || head[0] === undefined ? null : head[0],
    listen_port: count(head[2] ?? '', 'listen port'),
  };
  const peers = lines.slice(1).map((line): WgPeerState => {
    const f = line.split('\t');
    if (f.length !== 8) throw new WgDumpParseError(`peer line has ${f.length} fields, expected 8`);
    const [publicKey = '', , endpoint = NONE, allowed = NONE, handshake = '0', rx = '0', tx = '0', keepalive = 'off'] = f;
    return {
      public_key: publicKey,
      endpoint: endpoint === NONE ? null : endpoint,
      allowed_ips: allowed === NONE ? [] : allowed.split(','),
      latest_handshake: count(handshake, 'handshake time'),
      rx_bytes: count(rx, 'rx bytes'),
      tx_bytes: count(tx, 'tx bytes'),
      persistent_keepalive: keepalive === 'off' ? 0 : count(keepalive, 'keepalive'),
    };
  });
  return { interface: iface, peers };
}
