/**
 * What simulated agents count, as one flat map of named counters (summed
 * over agents and worker processes, and subtracted between two readings to
 * get a phase's share). Keys are built only by the functions here, so the
 * report can classify them by prefix.
 */
export type AgentCounters = Record<string, number>;

/** Which connection of an agent a counter is about. */
export type AgentChannel = 'watch' | 'tunnel' | 'put' | 'patch';

/** Prefixes of COUNTER.events and COUNTER.eventBytes, to sum them over types and kinds. */
export const EVENTS_PREFIX = 'watch.events.';
export const EVENT_BYTES_PREFIX = 'watch.event-bytes.';

export const COUNTER = {
  /** `POST .../events` requests sent. */
  watchRequests: 'watch.requests',
  /**
   * Watch requests that list at least one kind from the beginning (no
   * `gt_revision`): the join's lists, and any re-list after it (a stream
   * that lost its place, or `revision_compacted`).
   */
  watchLists: 'watch.lists',
  /** Watch requests answered 200. */
  watchOpened: 'watch.opened',
  /** Watch streams the server ended with the last chunk (graceful). */
  watchEnded: 'watch.ended',
  /** Watch streams that broke after 200 without the last chunk (reset, close). */
  watchDropped: 'watch.dropped',
  /** Open watch streams the agent gave up on after STREAM_SILENCE_MS without a byte (a dead connection). */
  watchSilent: 'watch.silent',
  /** `GET /api/agent/tunnel` upgrade attempts. */
  tunnelAttempts: 'tunnel.attempts',
  tunnelOpened: 'tunnel.opened',
  /** Waits for a `Retry-After` (429/503 answers that carried one). */
  retryAfterWaits: 'retry-after.waits',
  statusFramesSent: 'status.frames-sent',
  statusAcks: 'status.acks',
  putsSent: 'put.sent',
  putsOk: 'put.ok',
  /** `PATCH .../devices/{id}` of an agent's own device (its endpoints), sent and answered 200. */
  patchesSent: 'patch.sent',
  patchesOk: 'patch.ok',
  /** Tunnel pings answered with pongs, and `ping` requests answered. */
  pingsAnswered: 'tunnel.pings-answered',
  requestsAnswered: 'tunnel.requests-answered',
  unparsedLines: 'watch.unparsed-lines',
  lines: 'watch.lines',
  bodyBytes: 'watch.body-bytes',
  /** A non-success HTTP answer (watch: not 200; tunnel: not 101; PUT: not 200), by status. */
  http: (channel: AgentChannel, status: number): string => `${channel}.http.${status}`,
  /** A connection that failed before an answer: ECONNREFUSED, ECONNRESET, timeout, … */
  connectError: (channel: AgentChannel, code: string): string => `${channel}.connect.${code}`,
  /** An `error` event on a watch stream, by code. */
  streamError: (code: string): string => `watch.error-event.${code}`,
  /** A tunnel that closed after opening, by WebSocket close code. */
  tunnelClosed: (code: number): string => `tunnel.close.${code}`,
  /** `change`/`patch`/`delete` lines received on watch streams, by event type and kind (keepalives, tails, bookmarks not counted). */
  events: (type: string, kind: string): string => `${EVENTS_PREFIX}${type}.${kind}`,
  /** Their bytes: each line with its newline, without the chunk framing. */
  eventBytes: (type: string, kind: string): string => `${EVENT_BYTES_PREFIX}${type}.${kind}`,
  /** A `status_ack` carrying an error, by code. */
  statusAckError: (code: string): string => `status.ack-error.${code}`,
} as const;

export function bump(c: AgentCounters, key: string, by = 1): void {
  c[key] = (c[key] ?? 0) + by;
}

export function addCounters(into: AgentCounters, more: AgentCounters): AgentCounters {
  for (const [k, v] of Object.entries(more)) bump(into, k, v);
  return into;
}

/** `after − before`, keeping only keys that moved. */
export function diffCounters(after: AgentCounters, before: AgentCounters): AgentCounters {
  const out: AgentCounters = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** Non-success HTTP answers (any channel), by key. */
export function errorResponses(c: AgentCounters): AgentCounters {
  return pick(c, (k) => k.includes('.http.'));
}

/** Connections that failed or broke without an HTTP answer, by key. */
export function connectionFailures(c: AgentCounters): AgentCounters {
  return pick(c, (k) => k.includes('.connect.') || k === COUNTER.watchDropped || k === COUNTER.watchSilent);
}

/** Everything that counts as an error in a phase where nothing should fail. */
export function allErrors(c: AgentCounters): AgentCounters {
  return pick(
    c,
    (k) =>
      k.includes('.http.') ||
      k.includes('.connect.') ||
      k === COUNTER.watchDropped ||
      k === COUNTER.watchSilent ||
      k === COUNTER.watchEnded ||
      k.startsWith('watch.error-event.') ||
      k.startsWith('tunnel.close.') ||
      k.startsWith('status.ack-error.') ||
      k === COUNTER.unparsedLines,
  );
}

export function sumOf(c: AgentCounters): number {
  return Object.values(c).reduce((n, v) => n + v, 0);
}

/** "key n, key n" for a report; "none" when empty. */
export function describeCounters(c: AgentCounters): string {
  const parts = Object.entries(c)
    .filter(([, v]) => v !== 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v.toLocaleString('en-US')}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

function pick(c: AgentCounters, keep: (key: string) => boolean): AgentCounters {
  const out: AgentCounters = {};
  for (const [k, v] of Object.entries(c)) if (keep(k) && v !== 0) out[k] = v;
  return out;
}
