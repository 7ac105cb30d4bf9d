/**
 * The relay's wire format (docs/protocol.md "Relays"). Browser-safe.
 *
 * A message is `key (32 bytes) | record+`, a record `length (uint16 BE) |
 * packet`: agent → relay the key is the destination's WireGuard public key,
 * relay → agent the source's. Between replicas a message is
 * `org_id (16 bytes) | dst_key (32) | src_key (32) | record+`.
 */

/** Bytes of a WireGuard public key. */
export const RELAY_KEY_BYTES = 32;
/** Bytes of the length before each packet. */
export const RELAY_RECORD_HEADER_BYTES = 2;
/** Largest message either side sends or accepts (larger: closed with 1009). */
export const RELAY_MAX_MESSAGE_BYTES = 64 * 1024;
/** Unsent bytes past which a session drops what is sent to it. */
export const RELAY_SESSION_BUFFER_BYTES = 1024 * 1024;
/** Unsent bytes past which a replica-to-replica link drops what is sent over it. */
export const RELAY_LINK_BUFFER_BYTES = 4 * 1024 * 1024;
/** How long a replica trusts where another replica said a key is held. */
export const RELAY_LOCATION_CACHE_MS = 2000;
/** Bytes of the organization id (a UUID) on a replica-to-replica message. */
export const RELAY_ORG_ID_BYTES = 16;

/** Close codes of a relay session; the shared ones match the agent tunnel's. */
export const RELAY_CLOSE_CODES = {
  /** A newer session of the same device opened on this replica. */
  superseded: 4001,
  pingTimeout: 4002,
  /** The device's token was revoked or expired. */
  revoked: 4003,
  /** The server is shutting down. */
  shutdown: 1012,
  /** A text message: the relay speaks binary only. */
  unsupported: 1003,
  /** A message over RELAY_MAX_MESSAGE_BYTES. */
  tooBig: 1009,
} as const;

/** `type` of relay list stream lines. */
export const RELAY_LIST_EVENT = 'relays';

/** One entry of `GET /api/relays`. */
export interface RelayEntry {
  /** The replica's id. */
  id: string;
  /** Base URL of the replica's relay; null means the server the list was read from. */
  url: string | null;
  /** The replica's lease: the entry is gone after it. RFC 3339. */
  expires_at: string;
}

export interface RelayList {
  items: RelayEntry[];
}

/** Path timings shared by agents (docs/protocol.md "Paths between peers"). */
export const PATH_TRIAL_MS = 6000;
export const PATH_STALL_MS = 8000;
export const PATH_HANDSHAKE_STALE_MS = 135_000;
/** Trials of a relayed pair's direct candidates, at slots both agents derive from the clock and their keys. */
export const PATH_UPGRADE_PERIOD_MS = 5 * 60_000;
/** Least time between two STUN re-checks a broken path asks for. */
export const PATH_RESTUN_SPACING_MS = 10_000;
/** Bytes a peer must carry beyond the last report before a periodic report is due. */
export const PATH_REPORT_BYTES = 4096;
export const PATH_REPORT_INTERVAL_MS = 30_000;
