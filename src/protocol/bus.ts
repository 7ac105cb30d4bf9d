/**
 * Names used by the signal bus drivers and the agent registry: PostgreSQL
 * NOTIFY channels and Redis keys. Nothing else may spell them.
 */
export const BUS = {
  /** PostgreSQL NOTIFY channel carrying change signals. */
  pgChannel: 'fleetplane_signals',
  /** Redis pub/sub channel carrying change signals. */
  redisChannel: 'fleetplane:signals',
  /** Signal name prefix for an organization's changes: `org:<uuid>`. */
  orgSignalPrefix: 'org:',
  /** Signal name prefix for an agent connecting anywhere: `agent:<device uuid>`. */
  agentSignalPrefix: 'agent:',
  /** Signal name prefix for a change of an organization's device statuses or presence: `status:<uuid>`. */
  statusSignalPrefix: 'status:',
} as const;

export const REDIS_KEYS = {
  /** Hash per device: field = replica id, value = expiry (ms since epoch). */
  agentRegistry: (deviceId: string) => `fleetplane:agent:${deviceId}`,
  /** Hash per relay session key (organization and WireGuard public key): field = replica id, value = expiry (ms). */
  relayRegistry: (orgId: string, publicKey: string) => `fleetplane:relay:${orgId}:${publicKey}`,
} as const;

export function orgSignal(orgId: string): string {
  return `${BUS.orgSignalPrefix}${orgId}`;
}

export function statusSignal(orgId: string): string {
  return `${BUS.statusSignalPrefix}${orgId}`;
}

export function agentSignal(deviceId: string): string {
  return `${BUS.agentSignalPrefix}${deviceId}`;
}

/**
 * A message of the reliable signal bus (PostgreSQL NOTIFY payload or Redis
 * pub/sub message). Every message carries its publisher's id (random per
 * process start) and a sequence number:
 * - `signal`: `name` changed; `seq` is this message's own number (1, 2, ...).
 * - `all`: everything may have changed (the publisher's queue overflowed);
 *   `seq` is this message's own number.
 * - `hello`: sent at start and when idle; `seq` is the last number the
 *   publisher has assigned (0 before its first message). A subscriber that
 *   has not seen every number up to it lost a message.
 */
export type BusMessage =
  | { readonly type: 'signal'; readonly publisher: string; readonly seq: number; readonly name: string }
  | { readonly type: 'all'; readonly publisher: string; readonly seq: number }
  | { readonly type: 'hello'; readonly publisher: string; readonly seq: number };

/** Type letters of the compact encoding `<letter>:<publisher>:<seq>[:<name>]`. */
export const BUS_MESSAGE_TYPES = { signal: 's', all: 'a', hello: 'h' } as const;

/**
 * Longest signal name a message may carry, in UTF-16 units (NOTIFY payloads
 * are limited to 8000 bytes). A longer name is sent as an `all` message.
 */
export const BUS_MAX_NAME_LENGTH = 1024;

/** Publisher ids: lower-case hex, so they never contain the `:` separator. */
const PUBLISHER_ID = /^[0-9a-f]{1,64}$/;

/** Encodes a bus message: `s:<publisher>:<seq>:<name>`, `a:<publisher>:<seq>` or `h:<publisher>:<seq>`. */
export function encodeBusMessage(m: BusMessage): string {
  const head = `${BUS_MESSAGE_TYPES[m.type]}:${m.publisher}:${m.seq}`;
  return m.type === 'signal' ? `${head}:${m.name}` : head;
}

/** Decodes a bus message; undefined when the payload is not one (the caller reports it). */
export function decodeBusMessage(payload: string): BusMessage | undefined {
  const first = payload.indexOf(':');
  const second = first < 0 ? -1 : payload.indexOf(':', first + 1);
  if (second < 0) return undefined;
  const letter = payload.slice(0, first);
  const publisher = payload.slice(first + 1, second);
  if (!PUBLISHER_ID.test(publisher)) return undefined;
  const third = payload.indexOf(':', second + 1);
  const seqText = third < 0 ? payload.slice(second + 1) : payload.slice(second + 1, third);
  if (!/^\d{1,15}$/.test(seqText)) return undefined;
  const seq = Number(seqText);
  if (letter === BUS_MESSAGE_TYPES.signal) {
    if (third < 0) return undefined;
    const name = payload.slice(third + 1);
    if (name === '' || name.length > BUS_MAX_NAME_LENGTH || seq < 1) return undefined;
    return { type: 'signal', publisher, seq, name };
  }
  if (third >= 0) return undefined;
  if (letter === BUS_MESSAGE_TYPES.all) return seq < 1 ? undefined : { type: 'all', publisher, seq };
  if (letter === BUS_MESSAGE_TYPES.hello) return { type: 'hello', publisher, seq };
  return undefined;
}
