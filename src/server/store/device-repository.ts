import type { TagCaller } from './tag-ownership.js';
import type { Database } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type { DeviceCreate, DevicePatch } from '../../protocol/index.js';
import * as devices from './devices.js';
import * as deviceTokens from './device-tokens.js';
import { ephemeralCandidates } from './ephemeral-devices.js';
import { clearPresence, statusesOf, writeStatusBatch, type StatusBatch } from './device-status.js';
import { hashSecret } from './secrets.js';
import type { TokenIndex } from './token-index.js';
import { afterCommit, epochMs } from './token-index-change.js';

/**
 * Devices of an organization: their desired state, their tokens, and the
 * status and presence agents report. Members are bound, so they may be
 * passed as callbacks.
 */
export class DeviceRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly bus: SignalBus,
    private readonly tokens: TokenIndex,
    /** Devices not seen for longer than this are stale, and a PUT's `online` no longer counts. */
    private readonly staleAfterSeconds: number,
  ) {
    this.#db = db;
  }

  /**
   * Creates a device with its first token. `registrationKeyId`: the key it
   * registered with; `tokenTtlSeconds`: the token's lifetime (0: it never
   * expires). The token authenticates once the creation committed.
   */
  create = (orgId: string, input: DeviceCreate, registrationKeyId: string | undefined, tokenTtlSeconds: number, tagCaller: TagCaller) =>
    afterCommit(this.tokens, devices.createDevice(this.#db, this.bus, orgId, input, registrationKeyId, tokenTtlSeconds, tagCaller), (created) => ({
      added: [
        {
          hash: hashSecret(created.deviceToken),
          token: { principal: { type: 'device', tokenId: created.tokenId, orgId, deviceId: created.device.id }, expiresAt: epochMs(created.tokenExpiresAt) },
        },
      ],
    }));
  get = (orgId: string, id: string) => devices.getDevice(this.#db, orgId, id, this.staleAfterSeconds);
  /** `ifMatch`: the revision the caller last read; a newer one refuses the patch. `tagCaller`: whose tag changes these are. */
  patch = (orgId: string, id: string, patch: DevicePatch, tagCaller: TagCaller, ifMatch?: string) =>
    devices.patchDevice(this.#db, this.bus, orgId, id, patch, this.staleAfterSeconds, tagCaller, ifMatch);
  /** Deletes it; its tokens stop authenticating once the deletion committed. */
  delete = (orgId: string, id: string, ifMatch?: string) =>
    afterCommit(this.tokens, devices.deleteDevice(this.#db, this.bus, orgId, id, ifMatch), () => ({ deviceDeleted: id }));

  /** A device's new token; its other tokens expire within `overlapSeconds` (here at once, elsewhere through the revocation follower). */
  renewToken = (orgId: string, deviceId: string, ttlSeconds: number, overlapSeconds: number) =>
    afterCommit(this.tokens, deviceTokens.renewDeviceToken(this.#db, orgId, deviceId, ttlSeconds, overlapSeconds), (renewed) => ({
      shortened: renewed.shortened.map((s) => ({ tokenId: s.id, expiresAt: s.expiresAt })),
      added: [
        {
          hash: hashSecret(renewed.device_token),
          token: { principal: { type: 'device', tokenId: renewed.tokenId, orgId, deviceId }, expiresAt: epochMs(renewed.expires_at) },
        },
      ],
    }));
  /** Revokes every token of the device (its key expired); they stop authenticating here once committed, elsewhere through the revocation follower. */
  expireTokens = (orgId: string, deviceId: string) =>
    afterCommit(this.tokens, deviceTokens.expireDeviceTokens(this.#db, orgId, deviceId), (revoked) => ({ revoked }));
  /** One page of an organization's device-token expiries (see device-tokens.ts). */
  listTokenExpiries = (orgId: string, opts: { withinSeconds?: number | undefined; after?: string | undefined; limit: number }) =>
    deviceTokens.listDeviceTokenExpiries(this.#db, orgId, opts);
  /** Ephemeral devices offline longer than `offlineSeconds`, while `replicaId` is the collecting replica (see ephemeral-devices.ts). */
  ephemeralCandidates = (replicaId: string, offlineSeconds: number, limit: number) =>
    ephemeralCandidates(this.#db, replicaId, offlineSeconds, this.staleAfterSeconds, limit);

  /** The reported statuses of these devices, staleness applied. */
  statusesOf = (ids: readonly string[]) => statusesOf(this.#db, ids, this.staleAfterSeconds);
  /** Records statuses and this replica's presence changes in one statement (the status batcher's flush). */
  writeStatusBatch = (batch: StatusBatch) => writeStatusBatch(this.#db, batch);
  /** Forgets every presence `replicaId` recorded (its agents are no longer connected to it). */
  clearPresence = (replicaId: string) => clearPresence(this.#db, replicaId);
}
