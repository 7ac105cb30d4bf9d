import { Type, type Static } from '@sinclair/typebox';
import { strict } from './common.js';
import { WatchRequest } from './watch-request.js';

/**
 * Body of `POST /api/organizations/{org}/page` (docs/protocol.md "Page
 * stream"): the watches of a watch stream, and whether the stream also
 * carries the organization's convergence and its devices' statuses.
 */
export const PageRequest = Type.Object(
  {
    watches: WatchRequest,
    convergence: Type.Optional(Type.Boolean()),
    statuses: Type.Optional(Type.Boolean()),
  },
  { ...strict, $id: 'PageRequest' },
);
export type PageRequest = Static<typeof PageRequest>;
