import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifySchema } from 'fastify';
import { BEARER_SCHEME } from '../../protocol/index.js';
import type { SchemaComponents } from './schema-components.js';

/** The license of the API and its implementation (package.json's `license`). */
export const API_LICENSE = 'Apache-2.0';

/** Operation tags, each described (an undescribed tag helps no reader). */
const TAGS: readonly { name: string; description: string }[] = [
  { name: 'organizations', description: "Organizations: their network settings and the fleet's convergence." },
  { name: 'devices', description: 'Devices: spec written by clients, status written by each device itself.' },
  { name: 'security groups', description: 'Firewall rules devices reference.' },
  { name: 'tokens', description: 'Organization tokens (admin or read).' },
  { name: 'registration keys', description: 'Keys that enroll devices.' },
  { name: 'members', description: 'Members of an organization, their roles (owner, admin, read) and invitations.' },
  { name: 'login', description: 'User login through the OpenID Connect issuer: browser (code with PKCE) and device (RFC 8628). No credential.' },
  { name: 'sessions', description: "Users' sessions: the caller's own, refresh, logout, and a user's list." },
  { name: 'api keys', description: "Users' personal API keys, scoped to organizations and a role." },
  { name: 'audit', description: 'The audit log: who changed what, when and from where.' },
  { name: 'watch', description: 'List and watch: the streams agents and informers follow.' },
  { name: 'agents', description: 'Agent tunnels and requests to agents, wherever they are connected.' },
  { name: 'replicas', description: 'The server replicas sharing one database.' },
  { name: 'relays', description: 'The relay carrying WireGuard packets between devices that reach each other no other way, and the list of relays.' },
  { name: 'system', description: 'About the API itself.' },
];

/**
 * The options of @fastify/swagger for `GET /api/openapi.json`: OpenAPI 3.1,
 * the protocol's named schemas as `components.schemas` (`components` fills
 * them as routes register) and every route's schema referring to them.
 */
export function openApiOptions(components: SchemaComponents): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'fleetplane API',
        version: '1',
        description: 'The control plane of a fleet of network agents. The contract, with what no schema says, is docs/protocol.md.',
        license: { name: API_LICENSE, identifier: API_LICENSE },
      },
      // Relative: the server that serves this document, wherever it listens.
      servers: [{ url: '/', description: 'The server that serves this document.' }],
      tags: [...TAGS],
      components: { securitySchemes: { bearer: { type: 'http', scheme: BEARER_SCHEME } }, schemas: components.schemas as Record<string, never> },
      security: [{ bearer: [] }],
    },
    transform: ({ schema, url }) => ({ schema: components.referenced(schema) as FastifySchema, url }),
  };
}
