/**
 * STUN (RFC 5389) as fleetplane speaks it: Binding requests and their
 * responses, nothing else (docs/protocol.md "STUN"). Every server replica
 * answers on two UDP ports; a client asking both from one socket learns
 * whether its NAT's mapping depends on the destination. No Node built-ins:
 * this module must run in browsers too.
 */
import { formatIpv4, ipFamily, ipv6Groups, parseIpv4 } from './ip.js';

/** The ports a server answers STUN on unless configured otherwise (3478 is IANA's STUN port). */
export const STUN_DEFAULT_PORT = 3478;
export const STUN_DEFAULT_ALT_PORT = 3479;

export const STUN_MAGIC_COOKIE = 0x2112a442;
export const STUN_HEADER_BYTES = 20;

export const STUN_MESSAGE_TYPE = {
  bindingRequest: 0x0001,
  bindingSuccess: 0x0101,
  bindingError: 0x0111,
} as const;

export const STUN_ATTRIBUTE = {
  mappedAddress: 0x0001,
  /** RFC 3489/5780: asks the server to answer from another address or port. */
  changeRequest: 0x0003,
  errorCode: 0x0009,
  unknownAttributes: 0x000a,
  xorMappedAddress: 0x0020,
  software: 0x8022,
  fingerprint: 0x8028,
} as const;

/** 420: the request has a comprehension-required attribute the server does not implement. */
export const STUN_ERROR_UNKNOWN_ATTRIBUTE = 420;

/** A transport address as STUN carries it. `address` is in text form (IPv6 compressed, RFC 5952). */
export interface StunAddress {
  family: 4 | 6;
  address: string;
  port: number;
}

export interface StunAttribute {
  type: number;
  value: Uint8Array;
}

/** A STUN message whose header and attribute framing are well-formed. */
export interface StunMessage {
  type: number;
  /**
   * 12 bytes after the magic cookie; for a classic (RFC 3489) message, which
   * has no cookie, the 16 bytes that follow the length.
   */
  transactionId: Uint8Array;
  /** True for an RFC 3489 message (no magic cookie): it understands MAPPED-ADDRESS only. */
  classic: boolean;
  attributes: readonly StunAttribute[];
}

const FAMILY_CODE = { 4: 0x01, 6: 0x02 } as const;

/**
 * Reads a STUN message, or undefined when `bytes` is not one (a short or
 * misaligned header, a length that disagrees with the datagram, an attribute
 * running past the end). Never throws.
 */
export function decodeStunMessage(datagram: Uint8Array): StunMessage | undefined {
  if (datagram.length < STUN_HEADER_BYTES) return undefined;
  // A copy: a Node Buffer's slice() is a view into a shared pool, and what this returns must own its bytes.
  const bytes = new Uint8Array(datagram);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = view.getUint16(0);
  const length = view.getUint16(2);
  // The two top bits of every STUN message are zero; the length counts whole 4-byte words.
  if ((type & 0xc000) !== 0 || length % 4 !== 0 || STUN_HEADER_BYTES + length !== bytes.length) return undefined;
  const classic = view.getUint32(4) !== STUN_MAGIC_COOKIE;
  const transactionId = bytes.slice(classic ? 4 : 8, STUN_HEADER_BYTES);
  const attributes: StunAttribute[] = [];
  let at = STUN_HEADER_BYTES;
  while (at < bytes.length) {
    if (at + 4 > bytes.length) return undefined;
    const attrType = view.getUint16(at);
    const attrLength = view.getUint16(at + 2);
    const end = at + 4 + attrLength;
    if (end > bytes.length) return undefined;
    attributes.push({ type: attrType, value: bytes.slice(at + 4, end) });
    at = end + ((4 - (attrLength % 4)) % 4);
  }
  if (at !== bytes.length) return undefined;
  return { type, transactionId, classic, attributes };
}

/** A message with these attributes, framed and padded. */
export function encodeStunMessage(message: StunMessage): Uint8Array {
  const padded = (n: number): number => n + ((4 - (n % 4)) % 4);
  const length = message.attributes.reduce((sum, a) => sum + 4 + padded(a.value.length), 0);
  const out = new Uint8Array(STUN_HEADER_BYTES + length);
  const view = new DataView(out.buffer);
  view.setUint16(0, message.type);
  view.setUint16(2, length);
  if (message.classic) out.set(message.transactionId.subarray(0, 16), 4);
  else {
    view.setUint32(4, STUN_MAGIC_COOKIE);
    out.set(message.transactionId.subarray(0, 12), 8);
  }
  let at = STUN_HEADER_BYTES;
  for (const a of message.attributes) {
    view.setUint16(at, a.type);
    view.setUint16(at + 2, a.value.length);
    out.set(a.value, at + 4);
    at += 4 + padded(a.value.length);
  }
  return out;
}

/** A Binding request with this (12-byte) transaction id and no attributes. */
export function encodeBindingRequest(transactionId: Uint8Array): Uint8Array {
  if (transactionId.length !== 12) throw new RangeError('a STUN transaction id has 12 bytes');
  return encodeStunMessage({ type: STUN_MESSAGE_TYPE.bindingRequest, transactionId, classic: false, attributes: [] });
}

/**
 * The success response to `request`, telling the client the address it was
 * seen from: XOR-MAPPED-ADDRESS and MAPPED-ADDRESS (RFC 3489 clients read
 * only the latter, and get only the latter).
 */
export function encodeBindingSuccess(request: Pick<StunMessage, 'transactionId' | 'classic'>, mapped: StunAddress): Uint8Array {
  const attributes: StunAttribute[] = [];
  if (!request.classic) attributes.push({ type: STUN_ATTRIBUTE.xorMappedAddress, value: addressValue(mapped, request.transactionId) });
  attributes.push({ type: STUN_ATTRIBUTE.mappedAddress, value: addressValue(mapped, undefined) });
  return encodeStunMessage({ type: STUN_MESSAGE_TYPE.bindingSuccess, transactionId: request.transactionId, classic: request.classic, attributes });
}

/** An error response to `request` (RFC 5389 §15.6), listing `unknown` attribute types for a 420. */
export function encodeBindingError(request: Pick<StunMessage, 'transactionId' | 'classic'>, code: number, reason: string, unknown: readonly number[] = []): Uint8Array {
  const phrase = new TextEncoder().encode(reason).subarray(0, 763);
  const error = new Uint8Array(4 + phrase.length);
  error[2] = Math.floor(code / 100) & 0x07;
  error[3] = code % 100;
  error.set(phrase, 4);
  const attributes: StunAttribute[] = [{ type: STUN_ATTRIBUTE.errorCode, value: error }];
  if (unknown.length > 0) {
    const list = new Uint8Array(unknown.length * 2);
    unknown.forEach((t, i) => new DataView(list.buffer).setUint16(i * 2, t));
    attributes.push({ type: STUN_ATTRIBUTE.unknownAttributes, value: list });
  }
  return encodeStunMessage({ type: STUN_MESSAGE_TYPE.bindingError, transactionId: request.transactionId, classic: request.classic, attributes });
}

/** The address a response reports: XOR-MAPPED-ADDRESS if present and readable, else MAPPED-ADDRESS. */
export function readMappedAddress(message: StunMessage): StunAddress | undefined {
  const xor = message.attributes.find((a) => a.type === STUN_ATTRIBUTE.xorMappedAddress);
  const fromXor = xor && !message.classic ? parseAddressValue(xor.value, message.transactionId) : undefined;
  if (fromXor) return fromXor;
  const plain = message.attributes.find((a) => a.type === STUN_ATTRIBUTE.mappedAddress);
  return plain ? parseAddressValue(plain.value, undefined) : undefined;
}

/**
 * The address a datagram came from, in STUN's terms. An IPv4-mapped IPv6
 * source (an IPv4 client of a dual-stack socket) is reported as IPv4.
 * Undefined when `address` is not an IP address.
 */
export function stunAddress(address: string, port: number): StunAddress | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const text = mapped?.[1] ?? address;
  const family = ipFamily(text);
  if (family === undefined || !Number.isInteger(port) || port < 0 || port > 65535) return undefined;
  return { family, address: family === 4 ? text : formatIpv6(ipv6Groups(text)), port };
}

/** `ip:port`, or `[ip]:port` for IPv6: the form of a device endpoint. */
export function formatStunAddress(a: StunAddress): string {
  return a.family === 6 ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}

/** The address's bytes, XORed with the cookie (and transaction id) when `xorWith` is given. */
function addressValue(a: StunAddress, xorWith: Uint8Array | undefined): Uint8Array {
  const ip = a.family === 4 ? ipv4Bytes(a.address) : ipv6Bytes(a.address);
  const out = new Uint8Array(4 + ip.length);
  out[1] = FAMILY_CODE[a.family];
  new DataView(out.buffer).setUint16(2, a.port);
  out.set(ip, 4);
  if (xorWith) xorAddress(out, xorWith);
  return out;
}

function parseAddressValue(value: Uint8Array, xorWith: Uint8Array | undefined): StunAddress | undefined {
  if (value.length < 4) return undefined;
  const family = value[1] === FAMILY_CODE[4] ? 4 : value[1] === FAMILY_CODE[6] ? 6 : undefined;
  if (family === undefined || value.length !== (family === 4 ? 8 : 20)) return undefined;
  const bytes = value.slice();
  if (xorWith) xorAddress(bytes, xorWith);
  const view = new DataView(bytes.buffer);
  const port = view.getUint16(2);
  if (family === 4) return { family, address: formatIpv4(view.getUint32(4)), port };
  const groups = Array.from({ length: 8 }, (_, i) => view.getUint16(4 + i * 2));
  return { family, address: formatIpv6(groups), port };
}

/** XORs port and address in place: the port with the cookie's top half, the address with cookie ‖ transaction id. */
function xorAddress(value: Uint8Array, transactionId: Uint8Array): void {
  const key = new Uint8Array(16);
  new DataView(key.buffer).setUint32(0, STUN_MAGIC_COOKIE);
  key.set(transactionId.subarray(0, 12), 4);
  for (let i = 2; i < value.length; i++) value[i] = (value[i] ?? 0) ^ (key[i < 4 ? i - 2 : i - 4] ?? 0);
}

function ipv4Bytes(text: string): Uint8Array {
  const n = parseIpv4(text) ?? 0;
  return new Uint8Array([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
}

function ipv6Bytes(text: string): Uint8Array {
  const out = new Uint8Array(16);
  const view = new DataView(out.buffer);
  ipv6Groups(text).forEach((g, i) => view.setUint16(i * 2, g));
  return out;
}

/** RFC 5952 text: lower case, the longest run (of two or more) of zero groups as `::`. */
function formatIpv6(groups: readonly number[]): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (gs: readonly number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (best < 0) return hex(groups);
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLength))}`;
}
