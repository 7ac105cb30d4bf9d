import type { RawData } from 'ws';
import { RELAY_KEY_BYTES, RELAY_MAX_MESSAGE_BYTES, RELAY_ORG_ID_BYTES, RELAY_RECORD_HEADER_BYTES } from '../../protocol/index.js';

/*
 * The relay's messages (docs/protocol.md "Relays"), as the server reads and
 * rewrites them:
 * - a session's: `key (32) | record+` (to the relay the destination's key,
 *   from it the source's);
 * - a link's, between replicas: `org_id (16) | dst_key (32) | src_key (32) | record+`.
 * A link message's tail from `src_key` on is exactly what the destination
 * session receives, so a replica delivers it without a copy.
 */

/** Bytes before the first record of a link message. */
export const LINK_HEADER_BYTES = RELAY_ORG_ID_BYTES + 2 * RELAY_KEY_BYTES;
/** Where, in a link message, the part a session receives (`src_key | record+`) starts. */
export const LINK_DELIVERY_OFFSET = RELAY_ORG_ID_BYTES + RELAY_KEY_BYTES;
/** Largest link message: a session's largest, with the organization and the other key. */
export const LINK_MAX_MESSAGE_BYTES = RELAY_MAX_MESSAGE_BYTES + RELAY_ORG_ID_BYTES + RELAY_KEY_BYTES;

/**
 * The records of `buf` from `offset` on: how many, or 0 when the framing is
 * wrong (no record, a zero length, or a record running past the end).
 */
export function countRecords(buf: Buffer, offset: number): number {
  if (buf.length <= offset) return 0;
  let at = offset;
  let n = 0;
  while (at < buf.length) {
    if (at + RELAY_RECORD_HEADER_BYTES > buf.length) return 0;
    const length = buf.readUInt16BE(at);
    if (length === 0) return 0;
    at += RELAY_RECORD_HEADER_BYTES + length;
    if (at > buf.length) return 0;
    n++;
  }
  return n;
}

/** Packet bytes of a message holding `records` records from `offset` on (what the byte counters count). */
export function packetBytes(buf: Buffer, offset: number, records: number): number {
  return buf.length - offset - records * RELAY_RECORD_HEADER_BYTES;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An organization id (a UUID, any case) as its 16 bytes. */
export function orgIdBytes(orgId: string): Buffer {
  const lower = orgId.toLowerCase();
  if (!UUID.test(lower)) throw new TypeError(`not a UUID: ${orgId}`);
  return Buffer.from(lower.replace(/-/g, ''), 'hex');
}

/** The organization id (lower-case UUID) in the 16 bytes of `buf` at `offset`. */
export function orgIdAt(buf: Buffer, offset: number): string {
  const h = buf.toString('hex', offset, offset + RELAY_ORG_ID_BYTES);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The id a session is known by, here and in the relay registry: its organization and its key (base64). */
export function sessionId(orgId: string, publicKey: string): string {
  return `${orgId}:${publicKey}`;
}

/** The organization and the key of a session id (an organization id has no colon). */
export function splitSessionId(id: string): [orgId: string, publicKey: string] {
  const at = id.indexOf(':');
  return [id.slice(0, at), id.slice(at + 1)];
}

/** A WireGuard public key in base64, as 32 bytes; undefined when it isn't one. */
export function keyBytes(publicKey: string): Buffer | undefined {
  const b = Buffer.from(publicKey, 'base64');
  return b.length === RELAY_KEY_BYTES && b.toString('base64') === publicKey ? b : undefined;
}

/** A binary message as one buffer (ws hands fragments over joined, unless told otherwise). */
export function messageBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
