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
  /** A device renews its own token (docs/protocol.md "Device tokens over time"). */
  deviceToken: '/api/organizations/:org/devices/:id/token',
  /** When each device's token expires (admins). */
  deviceTokens: '/api/organizations/:org/device_tokens',
  securityGroups: '/api/organizations/:org/security_groups',
  securityGroup: '/api/organizations/:org/security_groups/:id',
  /** The organization's policy document (docs/protocol.md "Policy document"): GET, PUT (`?dry_run=true`), DELETE (back to objects). */
  policy: '/api/organizations/:org/policy',
  registrationKeys: '/api/organizations/:org/registration_keys',
  registrationKey: '/api/organizations/:org/registration_keys/:id',
  /** The registration key given as the bearer token: its own object (an agent learns its organization). */
  ownRegistrationKey: '/api/registration_key',
  tokens: '/api/organizations/:org/tokens',
  token: '/api/organizations/:org/tokens/:id',
  /** An owner makes a token rest on itself instead of the credential that made it (docs/protocol.md "Authentication and scope"). */
  tokenReparent: '/api/organizations/:org/tokens/:id/reparent',
  registrationKeyReparent: '/api/organizations/:org/registration_keys/:id/reparent',
  events: '/api/organizations/:org/events',
  /** One stream for a page of the dashboard: watch events, convergence and statuses (docs/protocol.md "Page stream"). */
  page: '/api/organizations/:org/page',
  /** Members and invitations (docs/protocol.md "Members and roles"). */
  members: '/api/organizations/:org/members',
  member: '/api/organizations/:org/members/:user',
  invitations: '/api/organizations/:org/invitations',
  invitation: '/api/organizations/:org/invitations/:id',
  /** A signed-in user claims an invitation by its token (an organization's first owner). */
  acceptInvitation: '/api/invitations/accept',
  /** A user's personal API keys; `:user` may be `me` (docs/protocol.md "Personal API keys"). */
  userApiKeys: '/api/users/:user/api_keys',
  userApiKey: '/api/users/:user/api_keys/:id',
  /** Users and login (docs/protocol.md "Users and login"): no credential on the first four. */
  /** How one may sign in here: public, so a sign-in page offers only what works (docs/protocol.md "Users and login"). */
  authMethods: '/api/auth/methods',
  authOidcLogin: '/api/auth/oidc/login',
  authOidcCallback: '/api/auth/oidc/callback',
  authDevice: '/api/auth/device',
  authDeviceToken: '/api/auth/device/token',
  authSession: '/api/auth/session',
  authSessionRefresh: '/api/auth/session/refresh',
  authLogout: '/api/auth/logout',
  /** The dashboard's sign-in with a pasted token (POST) and sign-out (DELETE): the `fleetplane_token` cookie. */
  authTokenSession: '/api/auth/token_session',
  /** The dashboard (a static bundle): its page, and its hashed assets. */
  dashboard: '/',
  dashboardAsset: '/ui/:file',
  /** A user's sessions; `:user` may be `me`. */
  userSessions: '/api/users/:user/sessions',
  userSession: '/api/users/:user/sessions/:id',
  convergence: '/api/organizations/:org/convergence',
  /** An organization's audit log; the server's (every organization's and those outside any) for the admin token (docs/protocol.md "Audit log"). */
  orgAudit: '/api/organizations/:org/audit',
  audit: '/api/audit',
  agentTunnel: '/api/agent/tunnel',
  /** A device's relay session, a WebSocket (docs/protocol.md "Relays"). */
  relay: '/api/relay',
  /** The relay list, with leases; `?watch=true` follows it. */
  relays: '/api/relays',
  privateAgentRpc: '/private/v1/agents/:id/rpc/:method',
  /** Replica to replica: one WebSocket per pair carrying relayed packets. */
  privateRelay: '/private/v1/relay',
} as const;

const enc = encodeURIComponent;

export const paths = {
  organizations: () => ROUTES.organizations,
  organization: (org: string) => `${ROUTES.organizations}/${enc(org)}`,
  devices: (org: string) => `${paths.organization(org)}/devices`,
  device: (org: string, id: string) => `${paths.devices(org)}/${enc(id)}`,
  deviceStatus: (org: string, id: string) => `${paths.device(org, id)}/status`,
  deviceRpc: (org: string, id: string, method: string) => `${paths.device(org, id)}/rpc/${enc(method)}`,
  deviceToken: (org: string, id: string) => `${paths.device(org, id)}/token`,
  deviceTokens: (org: string) => `${paths.organization(org)}/device_tokens`,
  securityGroups: (org: string) => `${paths.organization(org)}/security_groups`,
  securityGroup: (org: string, id: string) => `${paths.securityGroups(org)}/${enc(id)}`,
  policy: (org: string) => `${paths.organization(org)}/policy`,
  registrationKeys: (org: string) => `${paths.organization(org)}/registration_keys`,
  registrationKey: (org: string, id: string) => `${paths.registrationKeys(org)}/${enc(id)}`,
  ownRegistrationKey: () => ROUTES.ownRegistrationKey,
  tokens: (org: string) => `${paths.organization(org)}/tokens`,
  token: (org: string, id: string) => `${paths.tokens(org)}/${enc(id)}`,
  tokenReparent: (org: string, id: string) => `${paths.token(org, id)}/reparent`,
  registrationKeyReparent: (org: string, id: string) => `${paths.registrationKey(org, id)}/reparent`,
  acceptInvitation: () => ROUTES.acceptInvitation,
  events: (org: string) => `${paths.organization(org)}/events`,
  page: (org: string) => `${paths.organization(org)}/page`,
  members: (org: string) => `${paths.organization(org)}/members`,
  member: (org: string, user: string) => `${paths.members(org)}/${enc(user)}`,
  invitations: (org: string) => `${paths.organization(org)}/invitations`,
  invitation: (org: string, id: string) => `${paths.invitations(org)}/${enc(id)}`,
  userApiKeys: (user: string) => `/api/users/${enc(user)}/api_keys`,
  userApiKey: (user: string, id: string) => `${paths.userApiKeys(user)}/${enc(id)}`,
  authMethods: () => ROUTES.authMethods,
  authOidcLogin: () => ROUTES.authOidcLogin,
  authOidcCallback: () => ROUTES.authOidcCallback,
  authDevice: () => ROUTES.authDevice,
  authDeviceToken: () => ROUTES.authDeviceToken,
  authSession: () => ROUTES.authSession,
  authSessionRefresh: () => ROUTES.authSessionRefresh,
  authLogout: () => ROUTES.authLogout,
  authTokenSession: () => ROUTES.authTokenSession,
  userSessions: (user: string) => `/api/users/${enc(user)}/sessions`,
  userSession: (user: string, id: string) => `${paths.userSessions(user)}/${enc(id)}`,
  convergence: (org: string) => `${paths.organization(org)}/convergence`,
  orgAudit: (org: string) => `${paths.organization(org)}/audit`,
  audit: () => ROUTES.audit,
  replicas: () => ROUTES.replicas,
  agentTunnel: () => ROUTES.agentTunnel,
  relay: () => ROUTES.relay,
  relays: () => ROUTES.relays,
  privateRelay: () => ROUTES.privateRelay,
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
  /** `GET .../device_tokens?expiring_within=<seconds>`: only tokens expiring within this. */
  expiringWithin: 'expiring_within',
  /** Audit log pages (docs/protocol.md "Audit log"): a time range, `type[:id]`, an object id, an action, a kind, and (server level) an organization. */
  since: 'since',
  until: 'until',
  actor: 'actor',
  object: 'object',
  action: 'action',
  kind: 'kind',
  organization: 'organization',
  /** `PUT .../policy?dry_run=true`: check the document and say what would change, writing nothing. */
  dryRun: 'dry_run',
} as const;

/** Values of `QUERY.scope` on `/metrics`. */
export const METRICS_SCOPE = { process: 'process' } as const;
