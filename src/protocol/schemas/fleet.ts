import { Type, type Static } from '@sinclair/typebox';
import { OrNull, Revision, Timestamp, Uuid } from './common.js';
import type { ErrorCode } from '../errors.js';

export const Convergence = Type.Object({
  revision: Revision,
  devices: Type.Integer(),
  at_head: Type.Integer(),
  behind: Type.Integer(),
  error: Type.Integer(),
  stale: Type.Integer(),
  /** Devices holding a tunnel or a watch stream on a live replica (counted apart from the four states). */
  online: Type.Integer(),
  not_converged: Type.Array(
    Type.Object(
      {
        id: Uuid,
        hostname: Type.String(),
        applied_revision: OrNull(Revision),
        apply_error: OrNull(Type.String()),
        last_seen: OrNull(Timestamp),
      },
      { $id: 'NotConvergedDevice' },
    ),
  ),
}, { $id: 'Convergence' });

export const Replica = Type.Object({
  id: Type.String(),
  private_url: OrNull(Type.String()),
  started_at: Timestamp,
  lease_expires_at: Timestamp,
}, { $id: 'Replica' });

export const ReplicaList = Type.Object({ items: Type.Array(Replica) }, { $id: 'ReplicaList' });

export type Convergence = Static<typeof Convergence>;

/**
 * One line of `GET .../convergence?watch=true` (`application/json;stream=watch`):
 * `convergence` carries the whole current value (first at once, then on
 * every change, at most one per CONVERGENCE_MIN_INTERVAL_MS, and again after
 * each bookmark interval without change, so a dead stream shows); `error` is
 * the last line.
 */
export type ConvergenceEvent =
  | { type: 'convergence'; value: Convergence }
  | { type: 'error'; value: { code: ErrorCode; message: string } };

/** Least time between two `convergence` lines of one stream. */
export const CONVERGENCE_MIN_INTERVAL_MS = 100;
export type Replica = Static<typeof Replica>;
