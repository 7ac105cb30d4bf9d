import { SECRET_PREFIX } from '../../protocol/index.js';
import type { Database } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type {
  ApiKeyCreate,
  DeviceCreate,
  DevicePatch,
  InvitationCreate,
  MemberRole,
  OrganizationCreate,
  OrganizationPatch,
  OrgTokenCreate,
  RegistrationKeyCreate,
  SecurityGroupCreate,
  SecurityGroupPatch,
  WatchKind,
  AuditQuery,
} from '../../protocol/index.js';
import { insertAudit, listAudit, type AuditRecord, type AuditScope, type AuditSelection } from '../audit/index.js';
import { listReplicas } from '../replicas/index.js';
import type { Actor } from '../principal/index.js';
import * as orgs from './organizations.js';
import * as devices from './devices.js';
import * as groups from './security-groups.js';
import * as creds from './credentials.js';
import * as members from './members.js';
import * as invitations from './invitations.js';
import * as apiKeys from './api-keys.js';
import * as memberWrites from './member-writes.js';
import * as deviceTokens from './device-tokens.js';
import { ephemeralCandidates } from './ephemeral-devices.js';
import { readChanges, readHeads, readLive } from './changes.js';
import { compact } from './compaction.js';
import { convergence } from './convergence.js';
import { ConvergenceView } from './convergence-view.js';
import { deviceTotals } from './device-totals.js';
import { clearPresence, statusesOf, writeStatusBatch, type StatusBatch } from './device-status.js';
import { listKind, type ListParams } from './objects.js';
import { TokenIndex } from './token-index.js';
import { afterCommit } from './token-index-change.js';
import { hashSecret, sameHash } from './secrets.js';
import type { TokenPrincipal } from '../principal/index.js';
import { Logins } from './logins.js';

/** A stored expiry (ISO 8601, null: none) as the token index keeps it. */
const epochMs = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** Tokens kept in memory at most: about 200 bytes each. */
const TOKEN_INDEX_LIMIT = 1_000_000;

/**
 * The desired state of every organization, on PGlite or PostgreSQL. Every
 * write takes its organization's next revision in the writing transaction and
 * rings the bus; reads by revision serve lists and watch streams.
 */
export class Store {
  /** Valid organization and device tokens in memory (see TokenIndex). */
  readonly tokens = new TokenIndex(TOKEN_INDEX_LIMIT);

  #logins: Logins | undefined;

  /** Users, sessions and pending logins (docs/protocol.md "Users and login"). */
  get logins(): Logins {
    this.#logins ??= new Logins(this.#db, this.tokens);
    return this.#logins;
  }

  /** Private: what reads and writes the database goes through the store, never around it. */
  readonly #db: Database;

  constructor(
    db: Database,
    readonly bus: SignalBus,
    /** Devices not seen for longer than this are stale, and a PUT's `online` no longer counts. */
    readonly staleAfterSeconds = 90,
  ) {
    this.#db = db;
  }

  /** `ownerUserId`: a user creating it becomes its owner. */
  createOrganization = (input: OrganizationCreate, ownerUserId?: string) => orgs.createOrganization(this.#db, input, ownerUserId);
  getOrganization = (id: string) => orgs.getOrganization(this.#db, id);
  listOrganizations = (only?: string) => orgs.listOrganizations(this.#db, only);
  patchOrganization = (id: string, patch: OrganizationPatch, ifMatch?: string) =>
    orgs.patchOrganization(this.#db, this.bus, id, patch, ifMatch);
  deleteOrganization = (id: string, ifMatch?: string) =>
    afterCommit(this.tokens, orgs.deleteOrganization(this.#db, this.bus, id, ifMatch), () => ({ orgDeleted: id }));

  list = (orgId: string, kind: WatchKind, params: ListParams) => listKind(this.#db, orgId, kind, params);
  statusesOf = (ids: readonly string[]) => statusesOf(this.#db, ids, this.staleAfterSeconds);

  /** `tokenTtlSeconds`: the device token's lifetime (0: it never expires). */
  createDevice = (orgId: string, input: DeviceCreate, registrationKeyId?: string, tokenTtlSeconds = 0) =>
    afterCommit(this.tokens, devices.createDevice(this.#db, this.bus, orgId, input, registrationKeyId, tokenTtlSeconds), (created) => ({
      added: [
        {
          hash: hashSecret(created.deviceToken),
          token: { principal: { type: 'device', tokenId: created.tokenId, orgId, deviceId: created.device.id }, expiresAt: epochMs(created.tokenExpiresAt) },
        },
      ],
    }));
  /** A device's new token; its other tokens expire within `overlapSeconds` (here at once, elsewhere through the revocation follower). */
  renewDeviceToken = (orgId: string, deviceId: string, ttlSeconds: number, overlapSeconds: number) =>
    afterCommit(this.tokens, deviceTokens.renewDeviceToken(this.#db, orgId, deviceId, ttlSeconds, overlapSeconds), (renewed) => ({
      shortened: renewed.shortened.map((s) => ({ tokenId: s.id, expiresAt: s.expiresAt })),
      added: [
        {
          hash: hashSecret(renewed.device_token),
          token: { principal: { type: 'device', tokenId: renewed.tokenId, orgId, deviceId }, expiresAt: epochMs(renewed.expires_at) },
        },
      ],
    }));
  listDeviceTokenExpiries = (orgId: string, opts: { withinSeconds?: number | undefined; after?: string | undefined; limit: number }) =>
    deviceTokens.listDeviceTokenExpiries(this.#db, orgId, opts);
  /** Ephemeral devices offline longer than `offlineSeconds`, while `replicaId` is the collecting replica (see ephemeral-devices.ts). */
  ephemeralCandidates = (replicaId: string, offlineSeconds: number, limit: number) =>
    ephemeralCandidates(this.#db, replicaId, offlineSeconds, this.staleAfterSeconds, limit);
  getDevice = (orgId: string, id: string) => devices.getDevice(this.#db, orgId, id, this.staleAfterSeconds);
  patchDevice = (orgId: string, id: string, patch: DevicePatch, ifMatch?: string) =>
    devices.patchDevice(this.#db, this.bus, orgId, id, patch, this.staleAfterSeconds, ifMatch);
  deleteDevice = (orgId: string, id: string, ifMatch?: string) =>
    afterCommit(this.tokens, devices.deleteDevice(this.#db, this.bus, orgId, id, ifMatch), () => ({ deviceDeleted: id }));
  /** Records statuses and this replica's presence changes in one statement (the status batcher's flush). */
  writeStatusBatch = (batch: StatusBatch) => writeStatusBatch(this.#db, batch);
  clearPresence = (replicaId: string) => clearPresence(this.#db, replicaId);

  createSecurityGroup = (orgId: string, input: SecurityGroupCreate) => groups.createSecurityGroup(this.#db, this.bus, orgId, input);
  getSecurityGroup = (orgId: string, id: string) => groups.getSecurityGroup(this.#db, orgId, id);
  patchSecurityGroup = (orgId: string, id: string, patch: SecurityGroupPatch, ifMatch?: string) =>
    groups.patchSecurityGroup(this.#db, this.bus, orgId, id, patch, ifMatch);
  deleteSecurityGroup = (orgId: string, id: string, ifMatch?: string) =>
    groups.deleteSecurityGroup(this.#db, this.bus, orgId, id, ifMatch);

  /**
   * Resolves a bearer secret: the admin token and known organization and
   * device tokens in memory (the token index), anything else in the database.
   */
  async authenticate(secret: string, adminHash: string): Promise<TokenPrincipal | undefined> {
    const hash = hashSecret(secret);
    if (sameHash(hash, adminHash)) return { type: 'admin' };
    if (secret.startsWith(SECRET_PREFIX.registrationKey)) return creds.authenticate(this.#db, secret, adminHash);
    const known = this.tokens.get(hash);
    if (known) return known;
    const found = await creds.lookupToken(this.#db, hash);
    if (found) this.tokens.add(hash, found);
    return found?.principal;
  }

  /** Enters every valid token into the index (at start): reconnecting agents cost no query. */
  async loadTokens(): Promise<void> {
    for (const { hash, token } of await creds.validTokens(this.#db, this.tokens.limit)) this.tokens.add(hash, token);
  }

  createOrgToken = (orgId: string, input: OrgTokenCreate) =>
    afterCommit(this.tokens, this.#db.transaction((tx) => creds.createOrgToken(tx, orgId, input)), (created) => ({
      added: [
        {
          hash: hashSecret(created.token),
          token: { principal: { type: 'org', tokenId: created.id, orgId, role: created.role }, expiresAt: epochMs(created.expires_at) },
        },
      ],
    }));
  listOrgTokens = (orgId: string) => creds.listOrgTokens(this.#db, orgId);
  revokeOrgToken = (orgId: string, id: string) =>
    afterCommit(this.tokens, this.#db.transaction((tx) => creds.revokeOrgToken(tx, orgId, id)), () => ({ revoked: [id] }));
  /** A user's role in an organization now (the access module asks once per request; never cached). */
  memberRole = (orgId: string, userId: string) => members.memberRole(this.#db, orgId, userId);
  listMembers = (orgId: string) => members.listMembers(this.#db, orgId);
  listUserOrganizations = (userId: string, only?: readonly string[]) => members.listUserOrganizations(this.#db, userId, only);
  setMemberRole = (orgId: string, userId: string, role: MemberRole, scope: members.MemberChangeScope) =>
    memberWrites.setMemberRole(this.#db, orgId, userId, role, scope);
  removeMember = (orgId: string, userId: string, scope: members.MemberChangeScope) => memberWrites.removeMember(this.#db, orgId, userId, scope);
  createInvitation = (orgId: string, input: InvitationCreate, createdBy: string) => memberWrites.createInvitation(this.#db, orgId, input, createdBy);
  listInvitations = (orgId: string) => invitations.listInvitations(this.#db, orgId);
  revokeInvitation = (orgId: string, id: string, scope: { owners: boolean }) => memberWrites.revokeInvitation(this.#db, orgId, id, scope);
  createApiKey = async (userId: string, input: ApiKeyCreate) => {
    const { created } = await afterCommit(this.tokens, memberWrites.createApiKey(this.#db, userId, input), ({ created, hash }) => ({
      added: [
        {
          hash,
          token: {
            principal: { type: 'user', credential: 'api_key', tokenId: created.id, userId, serverAdmin: false, keyRole: created.role, keyOrgIds: created.organizations },
            expiresAt: Date.parse(created.expires_at),
          },
        },
      ],
    }));
    return created;
  };
  listApiKeys = (userId: string) => apiKeys.listApiKeys(this.#db, userId);
  revokeApiKey = (userId: string, id: string) =>
    afterCommit(this.tokens, memberWrites.revokeApiKey(this.#db, userId, id), () => ({ revoked: [id] }));
  createRegistrationKey = (orgId: string, input: RegistrationKeyCreate) =>
    this.#db.transaction((tx) => creds.createRegistrationKey(tx, orgId, input));
  listRegistrationKeys = (orgId: string) => creds.listRegistrationKeys(this.#db, orgId);
  getRegistrationKey = (orgId: string, id: string) => creds.getRegistrationKey(this.#db, orgId, id);
  deleteRegistrationKey = (orgId: string, id: string) => this.#db.transaction((tx) => creds.deleteRegistrationKey(tx, orgId, id));

  readChanges = (orgId: string, after: number, limit: number, kinds?: readonly WatchKind[]) =>
    readChanges(this.#db, orgId, after, limit, kinds);
  readHeads = (orgIds: readonly string[]) => readHeads(this.#db, orgIds);
  readLive = (orgId: string) => readLive(this.#db, orgId);
  compact = (retentionSeconds: number) => compact(this.#db, retentionSeconds);
  convergence = (orgId: string) => convergence(this.#db, orgId, this.staleAfterSeconds);
  /** An organization's convergence kept in memory, each read fetching only what changed (for followers). */
  convergenceView = (orgId: string) => {
    const view = new ConvergenceView(orgId, this.staleAfterSeconds);
    return { read: () => view.read(this.#db) };
  };
  /** Devices of all organizations by convergence state (one statement over every device: cache it). */
  deviceTotals = () => deviceTotals(this.#db, this.staleAfterSeconds);

  /** One page of an organization's audit log, or the server's. */
  listAudit = (selection: AuditSelection, query: AuditQuery) => listAudit(this.#db, selection, query);
  /** Records a refused call: an audit entry with its own actor, outside any write (audit/record.ts insertAudit). */
  recordDenied = (actor: Actor, where: Pick<AuditScope, 'source' | 'userAgent'>, entry: AuditRecord) => insertAudit(this.#db, actor, where, entry);

  /** The replicas sharing this database whose lease is live. */
  listReplicas = () => listReplicas(this.#db);
}
