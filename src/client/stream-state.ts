/**
 * Status of a shared informer stream, a discriminated union on `type`:
 * - `starting`: no watch accepted yet.
 * - `syncing`: connected; some informer hasn't reached its tail (initial list, join or relist).
 * - `synced`: connected; every informer is at its tail and following changes
 *   (an informer seeded with a state saved at its tail counts as at its tail).
 * - `retrying`: the last connection failed with a retryable error; the next try
 *   comes after `delayMs`. `attempt` counts consecutive failures (from 1).
 *   Caches keep their last state meanwhile.
 * - `failed`: stopped for good on a non-retryable error (401, 403, 404).
 * - `stopped`: aborted or stopped by the caller.
 */
export type InformerStatus =
  | { type: 'starting' }
  | { type: 'syncing' }
  | { type: 'synced' }
  | { type: 'retrying'; attempt: number; error: Error; delayMs: number }
  | { type: 'failed'; error: Error }
  | { type: 'stopped' };

/** What happens to a stream: the inputs of the state machine. */
export type StreamInput =
  /** The server accepted a watch; `synced`: every informer is already at its tail. */
  | { type: 'opened'; synced: boolean }
  /** An informer reached its tail, joined, or started a relist. */
  | { type: 'progress'; synced: boolean }
  /** A retryable failure; the loop waits `delayMs` and reconnects. */
  | { type: 'disconnected'; error: Error; attempt: number; delayMs: number }
  /** A non-retryable failure. */
  | { type: 'rejected'; error: Error }
  /** Aborted by the caller. */
  | { type: 'aborted' };

export type StatusType = InformerStatus['type'];
export type InputType = StreamInput['type'];

const connected = (synced: boolean): InformerStatus => (synced ? { type: 'synced' } : { type: 'syncing' });

/**
 * The one place status changes are decided. `failed` and `stopped` are
 * terminal; `progress` only moves a connected stream (while starting or
 * retrying, the status says what the connection is doing, not the caches).
 */
export function transition(state: InformerStatus, input: StreamInput): InformerStatus {
  if (state.type === 'failed' || state.type === 'stopped') return state;
  switch (input.type) {
    case 'opened':
      return connected(input.synced);
    case 'progress':
      return state.type === 'syncing' || state.type === 'synced' ? connected(input.synced) : state;
    case 'disconnected':
      return { type: 'retrying', attempt: input.attempt, error: input.error, delayMs: input.delayMs };
    case 'rejected':
      return { type: 'failed', error: input.error };
    case 'aborted':
      return { type: 'stopped' };
  }
}
