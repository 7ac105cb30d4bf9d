/**
 * Force-sync (the dynamic-ASG hook, served locally and as a tunnel method):
 * re-list from the server, reconcile, answer once the dataplane reflects it.
 */
import { AuthError, NotFoundError, type FleetplaneClient } from '../../client/index.js';
import { errorMessage } from '../errors.js';
import type { OrgWatch } from './org-watch.js';
import type { Reconciler } from './reconciler.js';
import { relistSnapshot } from './snapshot.js';
import { rejectionSummary } from './snapshot-admission.js';

/**
 * Why a force-sync failed:
 * - `unavailable`: the server couldn't be reached, or refused (the message says which).
 * - `apply_failed`: the listing was read but the dataplane apply failed, or the listing held
 *   objects that fail the protocol's schemas (applied without them); the previous state stays.
 * - `stopping`: the agent is shutting down.
 */
export type ForceSyncErrorCode = 'unavailable' | 'apply_failed' | 'stopping';

export class ForceSyncError extends Error {
  override readonly name = 'ForceSyncError';
  constructor(
    readonly code: ForceSyncErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ForceSyncDeps {
  client: FleetplaneClient;
  org: string;
  watch: OrgWatch;
  reconciler: Reconciler;
}

export interface ForceSyncResult {
  applied_revision: number;
}

/**
 * Lists the organization afresh (a consistent snapshot at the server's head),
 * and re-applies it, drift repair included. When the watch stream is already
 * newer than the listing, its snapshot is applied instead, so the applied
 * revision never goes back. Resolves with the revision the dataplane
 * reflects; throws ForceSyncError.
 */
export async function forceSync(deps: ForceSyncDeps, signal: AbortSignal): Promise<ForceSyncResult> {
  let listed;
  try {
    listed = await relistSnapshot(deps.client, deps.org, signal);
  } catch (err) {
    if (signal.aborted) throw new ForceSyncError('stopping', 'the force-sync was cancelled (it timed out, its caller left, or the agent is stopping)', { cause: err });
    const what = err instanceof AuthError || err instanceof NotFoundError ? 'the server refused the listing' : 'the server could not be reached';
    throw new ForceSyncError('unavailable', `${what}: ${errorMessage(err)}`, { cause: err });
  }
  const watched = deps.watch.snapshot();
  const newest = watched && watched.revision > listed.revision ? watched : listed;
  const outcome = await deps.reconciler.reconcile(newest, { force: true, signal });
  if (outcome.type === 'failed') {
    if (signal.aborted) throw new ForceSyncError('stopping', 'the force-sync was cancelled (it timed out, its caller left, or the agent is stopping)', { cause: outcome.error });
    throw new ForceSyncError('apply_failed', `the dataplane apply failed: ${errorMessage(outcome.error)}`, { cause: outcome.error });
  }
  if (outcome.type === 'applied' && outcome.rejected.length > 0) {
    throw new ForceSyncError('apply_failed', rejectionSummary(outcome.rejected));
  }
  const applied = deps.reconciler.state.applied_revision ?? newest.revision;
  return { applied_revision: applied };
}
