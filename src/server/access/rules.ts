import { READ_ONLY_AGENT_METHODS, ROUTES } from '../../protocol/index.js';
import type { PrincipalKind } from './principal-kind.js';

/**
 * Where a call comes in: a REST route, a watch stream (a REST route whose
 * answer is a stream), a device's WebSocket upgrade (the agent tunnel, the
 * relay session), or the private listener other replicas forward agent calls
 * and relayed packets to.
 */
export type Entry = 'rest' | 'watch' | 'tunnel' | 'private';

export type RuleMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * What a principal kind may do on a rule's route: `true`, anything; or only
 * on its own device (the path's `:id`, else 403 with `refusal`); or only the
 * agent methods listed (the path's `:method`, else 403 with `refusal`); or
 * anything, but not with a personal API key (403 with `refusal`).
 */
export type Grant =
  | true
  | { readonly ownDevice: true; readonly refusal: string }
  | { readonly methods: readonly string[]; readonly refusal: string }
  | { readonly noApiKey: true; readonly refusal: string };

/** One entry point's rule. */
export interface AccessRule {
  readonly entry: Entry;
  readonly method: RuleMethod;
  /** The route pattern (ROUTES), as the router registers it. */
  readonly route: string;
  /** `anyone`: no credential is looked at. Otherwise the kinds allowed, with what they may do. */
  readonly allow: 'anyone' | Readonly<Partial<Record<PrincipalKind, Grant>>>;
  /**
   * `org-in-path`: a principal confined to another organization than the
   * path's `:org` gets 404, as if it did not exist, before anything else;
   * a user gets its role there, 404 when not a member (user-kind.ts).
   * `user-in-path`: the path's `:user` (`me` or an id); a user other than
   * the caller gets 404, except for a server admin's session (`admin`).
   */
  readonly scope?: 'org-in-path' | 'user-in-path';
  /** The 403 message for the kinds not allowed; each kind has a default (REFUSALS). */
  readonly refusal?: string | Readonly<Partial<Record<PrincipalKind, string>>>;
}

/** The 403 message a kind gets where it is not allowed and the rule says nothing else. */
export const REFUSALS: Readonly<Record<PrincipalKind, string>> = {
  admin: 'the admin token may not do this',
  'org-owner': 'an owner may not do this',
  'org-admin': 'only the admin token may do this',
  'org-read': 'a read token may not write',
  device: 'a device token may not do this',
  registration: 'a registration key may only enroll a device',
  replica: 'a private token is valid only for the agent call it names',
  user: 'a user may not do this outside an organization it is a member of',
  'api-key': 'an API key may not do this',
};

const ADMIN_ONLY = 'only the admin token may do this';
const SESSION_ONLY = 'only a user session has a session';
/** Every kind a bearer token can resolve to. */
const ANY_TOKEN = { admin: true, 'org-admin': true, 'org-read': true, device: true, registration: true, user: true, 'api-key': true } as const;
const ANY_BUT_REGISTRATION = { admin: true, 'org-admin': true, 'org-read': true, device: true, user: true, 'api-key': true } as const;
/** Read access to the organization in the path. */
const READ = { admin: true, 'org-owner': true, 'org-admin': true, 'org-read': true, device: true } as const;
/** Write access to the organization in the path. */
const WRITE = { admin: true, 'org-owner': true, 'org-admin': true } as const;
/** What people and their tools read, not agents (an organization's policy document). */
const READ_NOT_DEVICE = { admin: true, 'org-owner': true, 'org-admin': true, 'org-read': true } as const;
/**
 * Minting credentials: a personal API key may not, whatever its role (a key
 * that minted tokens would have them outlive its revocation and its expiry).
 */
const NO_KEY_MINTS = { noApiKey: true, refusal: 'a personal API key may not create organization tokens or registration keys; use a session (fleetplane ctl login) or an organization admin token' } as const;
const MINT = { admin: true, 'org-owner': NO_KEY_MINTS, 'org-admin': NO_KEY_MINTS } as const;
/** Re-parenting: owners with a session, and the admin token (a server admin's session too). */
const REPARENT = {
  allow: { admin: true, 'org-owner': { noApiKey: true, refusal: 'a personal API key may not re-parent credentials' } },
  refusal: 'only an owner (or the admin token) may re-parent a credential',
} as const;
/** Members see who else is a member; tokens of a device do not. */
const MEMBERS_READ = { admin: true, 'org-owner': true, 'org-admin': true, 'org-read': true } as const;
const USER = 'user-in-path';
const ORG = 'org-in-path';

/**
 * Every entry point's rule (docs/protocol.md "Authentication and scope"):
 * one per method and route pattern, for every route the server registers.
 * A route without a rule fails the server's start.
 */
export const ACCESS_RULES: readonly AccessRule[] = [
  // System: no credential.
  { entry: 'rest', method: 'GET', route: ROUTES.healthz, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.readyz, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.metrics, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.openapi, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.replicas, allow: { admin: true }, refusal: ADMIN_ONLY },

  // Organizations: a confined token sees only its own, a user those it is a member of.
  { entry: 'rest', method: 'GET', route: ROUTES.organizations, allow: { ...READ, user: true, 'api-key': true } },
  { entry: 'rest', method: 'POST', route: ROUTES.organizations, allow: { admin: true }, refusal: ADMIN_ONLY },
  { entry: 'rest', method: 'GET', route: ROUTES.organization, scope: ORG, allow: READ },
  { entry: 'rest', method: 'PATCH', route: ROUTES.organization, scope: ORG, allow: WRITE },
  {
    entry: 'rest',
    method: 'DELETE',
    route: ROUTES.organization,
    scope: ORG,
    allow: { admin: true, 'org-owner': true },
    refusal: 'only an owner or the admin token may delete an organization',
  },
  { entry: 'rest', method: 'GET', route: ROUTES.convergence, scope: ORG, allow: READ },

  // Devices: a registration key enrolls; a device token changes its own discovered fields and writes its status.
  { entry: 'rest', method: 'GET', route: ROUTES.devices, scope: ORG, allow: READ },
  { entry: 'rest', method: 'POST', route: ROUTES.devices, scope: ORG, allow: { ...WRITE, registration: true } },
  { entry: 'rest', method: 'GET', route: ROUTES.device, scope: ORG, allow: READ },
  {
    entry: 'rest',
    method: 'PATCH',
    route: ROUTES.device,
    scope: ORG,
    allow: { ...WRITE, device: { ownDevice: true, refusal: 'a device token may change only its own device' } },
  },
  { entry: 'rest', method: 'DELETE', route: ROUTES.device, scope: ORG, allow: WRITE },
  {
    entry: 'rest',
    method: 'PUT',
    route: ROUTES.deviceStatus,
    scope: ORG,
    allow: { device: { ownDevice: true, refusal: 'only the device itself may write its status' } },
    refusal: {
      admin: 'only the device itself may write its status',
      'org-admin': 'only the device itself may write its status',
      'org-read': 'only the device itself may write its status',
    },
  },

  // Device tokens over time: a device renews only its own token; admins see when each expires.
  {
    entry: 'rest',
    method: 'POST',
    route: ROUTES.deviceToken,
    scope: ORG,
    allow: { device: { ownDevice: true, refusal: 'a device may renew only its own token' } },
    refusal: 'only the device itself may renew its token',
  },
  // Expiring a device's key is an admin's act on the device, like deleting it.
  { entry: 'rest', method: 'DELETE', route: ROUTES.deviceToken, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'GET', route: ROUTES.deviceTokens, scope: ORG, allow: WRITE },

  // Agent calls: read tokens only the read-only methods.
  {
    entry: 'rest',
    method: 'POST',
    route: ROUTES.deviceRpc,
    scope: ORG,
    allow: { ...WRITE, 'org-read': { methods: READ_ONLY_AGENT_METHODS, refusal: `a read token may call only ${READ_ONLY_AGENT_METHODS.join(' and ')}` } },
    refusal: { device: 'a device token may not call agents' },
  },

  // Security groups.
  { entry: 'rest', method: 'GET', route: ROUTES.securityGroups, scope: ORG, allow: READ },
  { entry: 'rest', method: 'POST', route: ROUTES.securityGroups, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'GET', route: ROUTES.securityGroup, scope: ORG, allow: READ },
  { entry: 'rest', method: 'PATCH', route: ROUTES.securityGroup, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'DELETE', route: ROUTES.securityGroup, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'GET', route: ROUTES.policy, scope: ORG, allow: READ_NOT_DEVICE },
  { entry: 'rest', method: 'PUT', route: ROUTES.policy, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'DELETE', route: ROUTES.policy, scope: ORG, allow: WRITE },

  // Credentials: organization admins only, reads included.
  { entry: 'rest', method: 'POST', route: ROUTES.tokens, scope: ORG, allow: MINT },
  { entry: 'rest', method: 'GET', route: ROUTES.tokens, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'DELETE', route: ROUTES.token, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'POST', route: ROUTES.tokenReparent, scope: ORG, ...REPARENT },
  { entry: 'rest', method: 'POST', route: ROUTES.registrationKeys, scope: ORG, allow: MINT },
  { entry: 'rest', method: 'GET', route: ROUTES.registrationKeys, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'GET', route: ROUTES.registrationKey, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'DELETE', route: ROUTES.registrationKey, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'POST', route: ROUTES.registrationKeyReparent, scope: ORG, ...REPARENT },
  { entry: 'rest', method: 'GET', route: ROUTES.ownRegistrationKey, allow: { registration: true }, refusal: 'only a registration key may look itself up' },

  // Members and invitations: admins manage admin and read members, owners everyone (routes/members.ts).
  { entry: 'rest', method: 'GET', route: ROUTES.members, scope: ORG, allow: MEMBERS_READ },
  { entry: 'rest', method: 'PATCH', route: ROUTES.member, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'DELETE', route: ROUTES.member, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'POST', route: ROUTES.invitations, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'GET', route: ROUTES.invitations, scope: ORG, allow: WRITE },
  { entry: 'rest', method: 'DELETE', route: ROUTES.invitation, scope: ORG, allow: WRITE },
  // An invitation claimed by its token: a user's session (a server admin's too) becomes the member.
  { entry: 'rest', method: 'POST', route: ROUTES.acceptInvitation, allow: { user: true }, refusal: "only a user's session accepts an invitation" },
  // Personal API keys: a user's own (a server admin's session sees and revokes anyone's). A key never mints a key.
  {
    entry: 'rest',
    method: 'POST',
    route: ROUTES.userApiKeys,
    scope: USER,
    allow: { user: true },
    refusal: { 'api-key': 'an API key may not create API keys', admin: 'an API key is created by its own user only' },
  },
  { entry: 'rest', method: 'GET', route: ROUTES.userApiKeys, scope: USER, allow: { admin: true, user: true, 'api-key': true } },
  { entry: 'rest', method: 'DELETE', route: ROUTES.userApiKey, scope: USER, allow: { admin: true, user: true, 'api-key': true } },
  // Login: no credential (rate-limited by the bounded pending logins). The caller's session: sessions only
  // (`admin` here is a server admin's session; the admin token passes the rule and gets 403 from the route).
  { entry: 'rest', method: 'GET', route: ROUTES.authMethods, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.authOidcLogin, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.authOidcCallback, allow: 'anyone' },
  { entry: 'rest', method: 'POST', route: ROUTES.authDevice, allow: 'anyone' },
  { entry: 'rest', method: 'POST', route: ROUTES.authDeviceToken, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.authSession, allow: { user: true }, refusal: SESSION_ONLY },
  { entry: 'rest', method: 'POST', route: ROUTES.authSessionRefresh, allow: { user: true }, refusal: SESSION_ONLY },
  { entry: 'rest', method: 'POST', route: ROUTES.authLogout, allow: { user: true }, refusal: SESSION_ONLY },
  // The route checks the token it is given (it is the credential), and the Origin of the request.
  { entry: 'rest', method: 'POST', route: ROUTES.authTokenSession, allow: 'anyone' },
  { entry: 'rest', method: 'DELETE', route: ROUTES.authTokenSession, allow: 'anyone' },
  // The dashboard's bundle is public; what it shows comes from the API, behind the same rules as any client.
  { entry: 'rest', method: 'GET', route: ROUTES.dashboard, allow: 'anyone' },
  { entry: 'rest', method: 'GET', route: ROUTES.dashboardAsset, allow: 'anyone' },
  // A user's sessions: the user themselves, or a server admin (and the admin token). A key never sees sessions.
  { entry: 'rest', method: 'GET', route: ROUTES.userSessions, scope: USER, allow: { admin: true, user: true }, refusal: { 'api-key': 'an API key may not see sessions' } },
  { entry: 'rest', method: 'DELETE', route: ROUTES.userSession, scope: USER, allow: { admin: true, user: true }, refusal: { 'api-key': 'an API key may not revoke sessions' } },
  // The audit log: admins; read tokens and read members only where the organization grants it (routes/audit.ts).
  { entry: 'rest', method: 'GET', route: ROUTES.orgAudit, scope: ORG, allow: MEMBERS_READ },
  { entry: 'rest', method: 'GET', route: ROUTES.audit, allow: { admin: true }, refusal: ADMIN_ONLY },
  // Streams and tunnels.
  { entry: 'watch', method: 'POST', route: ROUTES.events, scope: ORG, allow: READ },
  // A page stream is a watch stream with the convergence and statuses a read may GET anyway.
  { entry: 'watch', method: 'POST', route: ROUTES.page, scope: ORG, allow: READ },
  // Without an upgrade: any valid token learns that it needs one (400).
  { entry: 'rest', method: 'GET', route: ROUTES.agentTunnel, allow: ANY_TOKEN },
  { entry: 'tunnel', method: 'GET', route: ROUTES.agentTunnel, allow: { device: true }, refusal: 'only a device token may open an agent tunnel' },
  // The private token itself is bound to the device and the method (access/private-token.ts).
  { entry: 'private', method: 'POST', route: ROUTES.privateAgentRpc, allow: { replica: true } },
  // Relays (docs/protocol.md "Relays"): the list to any credential but a registration key (which only enrolls); a session to a device, as the tunnel.
  { entry: 'rest', method: 'GET', route: ROUTES.relays, allow: ANY_BUT_REGISTRATION },
  { entry: 'rest', method: 'GET', route: ROUTES.relay, allow: ANY_BUT_REGISTRATION },
  { entry: 'tunnel', method: 'GET', route: ROUTES.relay, allow: { device: true }, refusal: 'only a device token may open a relay session' },
  // The link token is bound to the receiving replica (access/private-token.ts).
  { entry: 'private', method: 'GET', route: ROUTES.privateRelay, allow: { replica: true } },
];
