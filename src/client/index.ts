/**
 * The fleetplane SDK: typed REST calls, the watch stream, informers.
 * Browser-safe: fetch, web streams, TextDecoder, AbortSignal; no Node built-ins.
 */
export { FleetplaneClient, type FleetplaneClientOptions } from './client.js';
export type { FetchLike } from './http-transport.js';
export type { OrganizationsApi } from './organizations-api.js';
export type { DevicesApi, RpcOptions, TokenExpiryOptions } from './devices-api.js';
export type { SecurityGroupsApi } from './security-groups-api.js';
export type { PolicyApi, PolicyApplyOptions, PolicyText } from './policy-api.js';
export type { OwnRegistrationKeyAnswer, RegistrationKeysApi, TokensApi } from './credentials-api.js';
export type { MembersApi } from './members-api.js';
export type { ApiKeysApi } from './api-keys-api.js';
export type { AuditApi, AuditFilter, ServerAuditFilter } from './audit-api.js';
export { RelaysApi, isRelayList, parseRelayListLine } from './relays-api.js';
export { deviceLoginPrompt, type AuthApi, type DeviceLoginOptions } from './auth-api.js';
export { collectList, type CallOptions, type WriteOptions, type PageOptions, type ListPage, type NotModified } from './collection.js';
export { isTombstone, type Tombstone, type Identified } from './guards.js';
export { PeerNames, formatBytes, type NamedDevice } from './peer-paths.js';
export {
  FleetplaneError,
  AuthError,
  NotFoundError,
  ConflictError,
  ValidationError,
  CompactedError,
  UnavailableError,
  AgentError,
  ServerError,
  TransportError,
  ProtocolError,
  PatchBaseError,
  LoginError,
  type FleetplaneErrorCode,
  type ClientErrorCode,
  type FleetplaneErrorInit,
} from './errors.js';
export { isRetryable } from './error-mapping.js';
export { parseRetryAfter, retryAfterOf } from './retry-after.js';
export { retryAfterWait, MAX_RETRY_AFTER_MS, MAX_RETRY_AFTER_JITTER_MS } from '../util/backoff.js';
export { DEFAULT_MAX_LINE_BYTES } from './ndjson-reader.js';
export type { NdjsonStreamOptions } from './ndjson-stream.js';
export type { WatchEventsOptions } from './watch-events.js';
export type { PageEvent, StatusesUpdate } from './page-events.js';
export type { WatchConvergenceOptions } from './convergence-watch.js';
export type { FollowConvergenceOptions, ConvergenceRetry } from './convergence-follow.js';
export { isConvergence, parseConvergenceLine } from './convergence-parser.js';
export type { StreamEvent } from './watch-event-parser.js';
export { Backoff, DEFAULT_BACKOFF, type BackoffPolicy } from '../util/backoff.js';
export {
  SharedInformers,
  DEFAULT_BOOKMARK_INTERVAL_MS,
  type SharedInformersOptions,
  type InformerErrorHandler,
  type InformerErrorContext,
} from './shared-informers.js';
export type { Informer } from './informer.js';
export { parseInformersState, type InformersState, type KindState } from './informers-state.js';
export type { InformerStatus } from './stream-state.js';
export type { InformerLogger } from './logger.js';
export type {
  Organization,
  CreatedOrganization,
  CreatedBy,
  CreatedInvitation,
  OrganizationCreate,
  OrganizationPatch,
  Device,
  DeviceObject,
  DeviceCreate,
  DevicePatch,
  DeviceStatus,
  DeviceStatusInput,
  PeerPath,
  EnrolledDevice,
  DeviceTokenRenewal,
  DeviceTokenExpiry,
  SecurityGroup,
  SecurityGroupCreate,
  SecurityGroupPatch,
  PolicyApplyResult,
  PolicyReleaseResult,
  PolicyChange,
  OrgToken,
  OrgTokenCreate,
  CreatedOrgToken,
  RegistrationKey,
  RegistrationKeyCreate,
  CreatedRegistrationKey,
  OwnRegistrationKey,
  Convergence,
  ConvergenceEvent,
  Replica,
  Watch,
  WatchKind,
  WatchEvent,
  ChangeEvent,
  DeleteEvent,
  TailEvent,
  BookmarkEvent,
  ErrorEvent,
  KindValue,
} from '../protocol/wire.js';
