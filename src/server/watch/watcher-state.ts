/**
 * Where a watch stream is, from its open to its end:
 * - `listing`: writing its initial list from the snapshot's shared buffers.
 * - `catching-up`: behind the ring (or not yet placed): it reads the database page by page.
 * - `in-ring`: served from the ring.
 * - `confirming`: in the ring, at its head, which is below what the client
 *   already has (its largest gt_revision): a fill asked for now reads the
 *   database's head before the tails may go out; the ring's events still go
 *   out meanwhile. A replica that missed signals (a bus outage) would
 *   otherwise send a kind's tail above changes of other kinds it has not
 *   sent yet, which then came after the tails, out of order. The Kubernetes
 *   watch cache waits to be fresh the same way before serving a resource
 *   version it has not seen.
 * - `confirmed`: that fill is done: the tails go out at the ring's head (a
 *   gt_revision above the database's head gets its tail then).
 * - `live`: its tails were sent: what it is sent now are changes, and
 *   bookmarks may flow. A live stream that falls behind the ring reads
 *   database pages again and stays live.
 * - `closed`: ended, for whatever reason.
 *
 * Every phase before `live` has tails still to send; `live` and `closed` end the initial list.
 */
export type Phase = 'listing' | 'catching-up' | 'in-ring' | 'confirming' | 'confirmed' | 'live' | 'closed';

/**
 * Whether a stream may be written to, apart from its phase:
 * - `open`: it may.
 * - `paused`: its socket holds more than its buffer limit; it resumes on drain.
 * - `gated`: the kernel memory guard refused it more; it resumes on `wake`.
 */
export type Flow = 'open' | 'paused' | 'gated';

/**
 * Its database read:
 * - `idle`: none in flight.
 * - `reading`: a catch-up read is in flight.
 * - `reading-again`: one is, and the stream was pumped meanwhile: it pumps again when the read ends.
 */
export type Read = 'idle' | 'reading' | 'reading-again';

export type WatcherState = Phase | Flow | Read;

/*
 * Phase (any phase but `closed` may also go to `closed`; nothing leaves it):
 *
 *                     +---------------------------------------+
 *                     |                                       v
 *   listing --+--> in-ring --> confirming --> confirmed --> live
 *             |     ^   |        |    |           |          ^
 *             |     |   v        |    +-----------|--------->|
 *             +-> catching-up <--+----------------+          |
 *                     |                                      |
 *                     +--------------------------------------+
 *
 * Flow:                               Read:
 *
 *   gated <---> open <---> paused       idle ---> reading ---> reading-again
 *                                        ^           |              |
 *                                        +-----------+--------------+
 */
/** The transitions allowed from each state: the diagram above. */
export const TRANSITIONS: { readonly [S in WatcherState]: readonly WatcherState[] } = {
  listing: ['in-ring', 'catching-up', 'closed'],
  'catching-up': ['in-ring', 'live', 'closed'],
  'in-ring': ['catching-up', 'confirming', 'live', 'closed'],
  confirming: ['confirmed', 'catching-up', 'live', 'closed'],
  confirmed: ['catching-up', 'live', 'closed'],
  live: ['closed'],
  closed: [],
  open: ['paused', 'gated'],
  paused: ['open'],
  gated: ['open'],
  idle: ['reading'],
  reading: ['reading-again', 'idle'],
  'reading-again': ['idle'],
};

/**
 * The one place a watch stream's state changes: returns `to` when the
 * diagram above has `from → to`, and throws (a programming error) when it
 * doesn't, including `from === to`.
 */
export function transition(from: Phase, to: Phase): Phase;
export function transition(from: Flow, to: Flow): Flow;
export function transition(from: Read, to: Read): Read;
export function transition(from: WatcherState, to: WatcherState): WatcherState {
  if (!TRANSITIONS[from].includes(to)) throw new Error(`watcher: no transition from ${from} to ${to}`);
  return to;
}
