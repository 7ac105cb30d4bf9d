import type { ErrorCode } from '../../protocol/index.js';

/**
 * The kinds of long-lived stream the server holds; each is counted apart in `fleetplane_streams_open{kind}`.
 * `relay`: a device's relay session; `relay_link`: another replica's link carrying relayed packets here;
 * `relay_list`: a `GET /api/relays?watch=true` stream.
 */
export const STREAM_KINDS = ['watch', 'convergence', 'tunnel', 'relay', 'relay_link', 'relay_list'] as const;
export type StreamKind = (typeof STREAM_KINDS)[number];

/**
 * Why the owner ends a stream:
 * - `revoked`: the credential that opened it was revoked or expired (`forbidden`);
 * - `shutdown`: the server is stopping (`unavailable`: resume elsewhere);
 * - `slow`: it, or all streams together, hold more than their bound (`slow_consumer`);
 * - `gone`: what it follows is gone (its organization deleted: `not_found`); the kind's own end.
 */
export type EndCause = 'revoked' | 'shutdown' | 'slow' | 'gone';

export interface StreamEnd {
  readonly cause: EndCause;
  /** The error code of the stream's last line (its close code, for a tunnel). */
  readonly code: ErrorCode;
  readonly message: string;
}

/**
 * One long-lived stream, as its kind implements it for the stream owner.
 * The owner decides when a stream ends; the kind decides how it ends
 * (which last line, which close frame). The contract:
 * - `end` writes the last line for `end` and starts closing; it is called at
 *   most once by the owner, and does nothing on a closed stream. The kind
 *   cuts the connection if its client doesn't take the last line within
 *   LAST_LINE_GRACE_MS (`endConnection` does, for line streams);
 * - `destroy` cuts the connection at once, without a last line;
 * - the kind tells the owner when the stream closed, for whatever reason,
 *   with `StreamOwner.release`, once.
 */
export interface OwnedStream {
  readonly kind: StreamKind;
  /** The credential (token id) whose revocation or expiry ends it; undefined when none can (the admin token). */
  readonly tokenId: string | undefined;
  readonly closed: boolean;
  /** Bytes queued for it that it alone holds, counted against the bound on all streams together. */
  readonly held: number;
  end(end: StreamEnd): void;
  destroy(): void;
}

/** The ends the owner gives, with the messages clients read. */
export const ENDS = {
  revoked: { cause: 'revoked', code: 'forbidden', message: 'the credential that opened this stream was revoked or expired' },
  shutdown: { cause: 'shutdown', code: 'unavailable', message: 'the server is shutting down; resume elsewhere' },
  overQueued: {
    cause: 'slow',
    code: 'slow_consumer',
    message: 'the server has too much queued for slow streams; resume from your last revision',
  },
} as const satisfies Record<string, StreamEnd>;
