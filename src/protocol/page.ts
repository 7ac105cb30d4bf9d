import type { Convergence } from './schemas/fleet.js';
import type { WatchEvent } from './watch.js';

/** Least time between two `statuses` lines of one organization: a device's changes in between come as its latest. */
export const PAGE_STATUS_INTERVAL_MS = 1_000;
/** A `statuses` line whose items take at least this many bytes of JSON is sent packed (`gzip`). */
export const PAGE_STATUS_PACK_MIN_BYTES = 4_096;

/** One device's observed status as a page stream carries it: what a device list shows, not its peers. */
export interface StatusSummary {
  id: string;
  /** As in the device's `status.online`. */
  online: boolean;
  /** The last report or disconnection; while `online` through a held connection, the page reads "now". */
  last_seen: string | null;
  applied_revision: number | null;
  apply_error: string | null;
  os: string | null;
  agent_version: string | null;
}

/** The members a `statuses` line's `gzip` packs. */
export interface StatusesItems {
  /** Devices whose summary changed (every device when `reset`). */
  items: StatusSummary[];
  /** Devices deleted since the last line: forget them. */
  removed: string[];
}

/**
 * What a `statuses` line carries: with `reset`, the summary of every device
 * (replace what you hold); else the devices that changed since the previous
 * line. The items come as `items` and `removed`, or packed: `gzip`, the
 * base64 of the gzip of `{"items": [...], "removed": [...]}`.
 */
export type StatusesValue = { reset: boolean } & (StatusesItems | { gzip: string });

export interface ConvergenceLine {
  type: 'convergence';
  value: Convergence;
}

export interface StatusesLine {
  type: 'statuses';
  value: StatusesValue;
}

/** The line types a page stream adds to those of a watch stream. */
export const PAGE_LINE_TYPES = ['convergence', 'statuses'] as const;

/** One line of a page stream: a watch event, or one of PAGE_LINE_TYPES. */
export type PageLine = WatchEvent | ConvergenceLine | StatusesLine;
