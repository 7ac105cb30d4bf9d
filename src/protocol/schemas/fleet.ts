import { Type, type Static } from '@sinclair/typebox';
import { Revision, Timestamp, Uuid } from './common.js';

export const Convergence = Type.Object({
  revision: Revision,
  devices: Type.Integer(),
  at_head: Type.Integer(),
  behind: Type.Integer(),
  error: Type.Integer(),
  stale: Type.Integer(),
  not_converged: Type.Array(
    Type.Object({
      id: Uuid,
      hostname: Type.String(),
      applied_revision: Type.Union([Revision, Type.Null()]),
      apply_error: Type.Union([Type.String(), Type.Null()]),
      last_seen: Type.Union([Timestamp, Type.Null()]),
    }),
  ),
});

export const Replica = Type.Object({
  id: Type.String(),
  private_url: Type.Union([Type.String(), Type.Null()]),
  started_at: Timestamp,
  lease_expires_at: Timestamp,
});

export const ReplicaList = Type.Object({ items: Type.Array(Replica) });

export type Convergence = Static<typeof Convergence>;
export type Replica = Static<typeof Replica>;
