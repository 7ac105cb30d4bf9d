/**
 * Every HTTP path of the API. Route templates use Fastify's `:param` form;
 * the builders produce concrete paths for clients.
 */
export const API_PREFIX = '/api';

export const ROUTES = {
  healthz: '/healthz',
  readyz: '/readyz',
  metrics: '/metrics',
  openapi: '/api/openapi.json',
  replicas: '/api/replicas',
  organizations: '/api/organizations',
  organization: '/api/organizations/:org',
  devices: '/api/organizations/:org/devices',
  device: '/api/organizations/:org/devices/:id',
  deviceStatus: '/api/organizations/:org/devices/:id/status',
  deviceRpc: '/api/organizations/:org/devices/:id/rpc/:method',
  securityGroups: '/api/organizations/:org/security_groups',
  securityGroup: '/api/organizations/:org/security_groups/:id',
  registrationKeys: '/api/organizations/:org/registration_keys',
  registrationKey: '/api/organizations/:org/registration_keys/:id',
  /** The registration key given as the bearer token: its own object (an agent learns its organization). */
  ownRegistrationKey: '/api/registration_key',
  tokens: '/api/organizations/:org/tokens',
  token: '/api/organizations/:org/tokens/:id',
  events: '/api/organizations/:org/events',
  convergence: '/api/organizations/:org/convergence',
  agentTunnel: '/api/agent/tunnel',
  privateAgentRpc: '/private/v1/agents/:id/rpc/:method',
} as const;

const enc = encodeURIComponent;

export const paths = {
  organizations: () => ROUTES.organizations,
  organization: (org: string) => `${ROUTES.organizations}/${enc(org)}`,
  devices: (org: string) => `${paths.organization(org)}/devices`,
  device: (org: string, id: string) => `${paths.devices(org)}/${enc(id)}`,
  deviceStatus: (org: string, id: string) => `${paths.device(org, id)}/status`,
  deviceRpc: (org: string, id: string, method: string) => `${paths.device(org, id)}/rpc/${enc(method)}`,
  securityGroups: (org: string) => `${paths.organization(org)}/security_groups`,
  securityGroup: (org: string, id: string) => `${paths.securityGroups(org)}/${enc(id)}`,
  registrationKeys: (org: string) => `${paths.organization(org)}/registration_keys`,
  registrationKey: (org: string, id: string) => `${paths.registrationKeys(org)}/${enc(id)}`,
  ownRegistrationKey: () => ROUTES.ownRegistrationKey,
  tokens: (org: string) => `${paths.organization(org)}/tokens`,
  token: (org: string, id: string) => `${paths.tokens(org)}/${enc(id)}`,
  events: (org: string) => `${paths.organization(org)}/events`,
  convergence: (org: string) => `${paths.organization(org)}/convergence`,
  replicas: () => ROUTES.replicas,
  agentTunnel: () => ROUTES.agentTunnel,
  privateAgentRpc: (deviceId: string, method: string) => `/private/v1/agents/${enc(deviceId)}/rpc/${enc(method)}`,
} as const;

/** Query parameter names. */
export const QUERY = {
  gtRevision: 'gt_revision',
  limit: 'limit',
  after: 'after',
  wait: 'wait',
  /** `GET /metrics?scope=process`: only the answering process's metrics (under `--workers`, one worker's). */
  scope: 'scope',
  /** `GET .../convergence?watch=true`: follow the convergence as a stream. */
  watch: 'watch',
} as const;

/** Values of `QUERY.scope` on `/metrics`. */
export const METRICS_SCOPE = { process: 'process' } as const;
