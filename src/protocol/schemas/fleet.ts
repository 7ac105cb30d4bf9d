import { Type, type Static } from '@sinclair/typebox';
import { OrNull, Revision, Timestamp, Uuid } from './common.js';

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

export type Replica = Static<typeof Replica>;
