import { ErrorResponse, MEDIA, QUERY, RelayListEventSchema, RelayListQuery, RelayListSchema, ROUTES, type RelayList } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { RouteModule } from '../http/context.js';
import { empty, errors } from '../http/route-responses.js';
import { revocableTokenOf } from '../principal/index.js';
import type { RelayListStreams } from './relay-list-streams.js';

const tags = ['relays'];

export interface RelayRoutesOptions {
  /** Whether this replica relays (`--relay`): without, `GET /api/relay` is 404. */
  enabled: boolean;
  /** Reads the relay list (one query). */
  read: () => Promise<RelayList>;
  streams: RelayListStreams;
}

/**
 * `GET /api/relays[?watch=true]` (any credential): the relay list, or a
 * stream of it; and `GET /api/relay` without an upgrade: 400 (404 with the
 * relay off). The upgrade itself is the relay endpoint's (relay-service.ts).
 * Who may call them is the access table's (src/server/access/rules.ts).
 */
export function relayRoutes(o: RelayRoutesOptions): RouteModule {
  return {
    register(app, ctx) {
      app.get(
        ROUTES.relays,
        {
          schema: {
            tags,
            operationId: 'listRelays',
            summary: `The replicas relaying packets between devices, with their leases; with ?watch=true, a stream of the list (${MEDIA.watch})`,
            querystring: RelayListQuery,
            response: {
              200: {
                description: `The relay list (${MEDIA.json}); with ?watch=true, a stream of RelayListEvent lines (${MEDIA.watch}) until an error line or the connection ends it.`,
                content: { [MEDIA.json]: { schema: RelayListSchema }, [MEDIA.watch]: { schema: RelayListEventSchema } },
              },
              ...errors([400, 401, 503], { 503: 'The server is shutting down (a stream): retry elsewhere' }, { retryAfter: true }),
            },
          },
        },
        async (req, reply) => {
          const current = await o.read();
          if (req.query[QUERY.watch] !== true) return current;
          o.streams.open(reply, current, revocableTokenOf(await ctx.access.principalOf(req)));
          return reply;
        },
      );

      app.get(
        ROUTES.relay,
        {
          schema: {
            tags,
            operationId: 'openRelaySession',
            summary: "A device's relay session (WebSocket upgrade only)",
            response: {
              101: empty('Switching Protocols: the session is open (WebSocket; binary messages in docs/protocol.md "Relays").'),
              ...errors([400, 401, 403, 404, 503], {
                400: 'Not a WebSocket upgrade',
                401: 'No valid device token',
                403: 'A token other than a device token',
                404: 'This replica does not relay (--relay=false)',
              }),
              // A WebSocket's success is 101, which OpenAPI linters don't count as one: this catch-all stands for the handshake's outcomes.
              default: { description: 'Any other outcome of the handshake: the error body.', content: { [MEDIA.json]: { schema: ErrorResponse } } },
            },
          },
        },
        async () => {
          if (!o.enabled) throw new ApiError('not_found', 'this replica does not relay (--relay=false)');
          throw new ApiError('bad_request', 'the relay session needs a WebSocket upgrade');
        },
      );
    },
  };
}
