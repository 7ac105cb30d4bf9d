/** Why the reliable layer woke every local subscription. */
export type ResyncReason =
  /** A missing sequence number did not arrive within the gap delay. */
  | 'gap'
  /** A hello announced a sequence number this subscriber never received. */
  | 'hello'
  /** First message from a publisher id not seen before (a replica (re)started). */
  | 'new-publisher'
  /** The listening connection (re)connected: messages may have been missed meanwhile. */
  | 'reconnect';

export const RESYNC_REASONS: readonly ResyncReason[] = ['gap', 'hello', 'new-publisher', 'reconnect'];

/**
 * Counters of one reliable bus instance, for tests and metrics. All are
 * monotonic counters except `publishers` (a gauge). Mutated only by the bus.
 */
export interface BusStats {
  /** `signal` and `all` messages handed to the transport (in a transaction: issued, maybe rolled back). */
  signalsSent: number;
  hellosSent: number;
  /** Messages the transport failed to send (their numbers become gaps elsewhere). */
  sendFailures: number;
  signalsReceived: number;
  hellosReceived: number;
  /** Received `all` messages (a publisher's queue overflowed). */
  allsReceived: number;
  /** Payloads that were not bus messages (logged and ignored). */
  malformed: number;
  /** Outgoing signal messages discarded on purpose by the test hook. */
  droppedOutgoing: number;
  /** Incoming signal messages discarded on purpose by the test hook. */
  droppedIncoming: number;
  /** Sequence numbers found missing (each counted once). */
  gaps: number;
  /** Missing sequence numbers that arrived later after all. */
  gapsFilled: number;
  /** Wake-alls caused by possible message loss, by reason. */
  resyncs: Record<ResyncReason, number>;
  /** Reconnections of the listening connection (not the first connect). */
  reconnects: number;
  /** Listener restarts because this bus stopped hearing its own messages. */
  deafRestarts: number;
  /** Times the publisher's pending names hit their limit and became one `all` message. */
  overflows: number;
  /** Publishers currently tracked (gauge). */
  publishers: number;
}

export function createBusStats(): BusStats {
  return {
    signalsSent: 0,
    hellosSent: 0,
    sendFailures: 0,
    signalsReceived: 0,
    hellosReceived: 0,
    allsReceived: 0,
    malformed: 0,
    droppedOutgoing: 0,
    droppedIncoming: 0,
    gaps: 0,
    gapsFilled: 0,
    resyncs: { gap: 0, hello: 0, 'new-publisher': 0, reconnect: 0 },
    reconnects: 0,
    deafRestarts: 0,
    overflows: 0,
    publishers: 0,
  };
}

/** All resync wake-ups, whatever the reason. */
export function totalResyncs(stats: Readonly<BusStats>): number {
  return RESYNC_REASONS.reduce((sum, r) => sum + stats.resyncs[r], 0);
}
