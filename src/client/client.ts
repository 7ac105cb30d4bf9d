import { paths, type Convergence, type PageRequest, type Replica, type Watch } from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { AuthApi } from './auth-api.js';
import { AuditApi } from './audit-api.js';
import { ApiKeysApi } from './api-keys-api.js';
import { MembersApi } from './members-api.js';
import { DevicesApi } from './devices-api.js';
import { RegistrationKeysApi, TokensApi } from './credentials-api.js';
import { isRecord, listOf } from './guards.js';
import { HttpTransport, type TransportOptions } from './http-transport.js';
import { OrganizationsApi } from './organizations-api.js';
import { PolicyApi } from './policy-api.js';
import { RelaysApi } from './relays-api.js';
import { SecurityGroupsApi } from './security-groups-api.js';
import type { StreamEvent } from './watch-event-parser.js';
import { watchEvents, type WatchEventsOptions } from './watch-events.js';
import { pageEvents, type PageEvent } from './page-events.js';

export type FleetplaneClientOptions = TransportOptions;

const isReplica = (v: unknown): v is Replica => isRecord(v) && typeof v['id'] === 'string';

/**
 * Typed access to every REST route of docs/protocol.md and to the watch stream.
 * Works in Node 20+ and browsers (only `fetch`, streams and TextDecoder).
 * Every call takes an optional AbortSignal; failures are FleetplaneError
 * subclasses (see errors.ts), aborts rethrow the signal's reason.
 */
export class FleetplaneClient {
  readonly organizations: OrganizationsApi;
  readonly devices: DevicesApi;
  readonly securityGroups: SecurityGroupsApi;
  readonly registrationKeys: RegistrationKeysApi;
  readonly tokens: TokensApi;
  /** Login and sessions. */
  readonly auth: AuthApi;
  /** Members of organizations and invitations. */
  readonly members: MembersApi;
  /** The caller's (or, for admins, a user's) personal API keys. */
  readonly apiKeys: ApiKeysApi;
  /** The audit log: an organization's, and the server's (admin token). */
  readonly audit: AuditApi;
  /** The server's relays and their leases. */
  readonly relays: RelaysApi;
  /** An organization's policy document: read, apply (or dry-run), release. */
  readonly policy: PolicyApi;
  readonly #transport: HttpTransport;

  constructor(opts: FleetplaneClientOptions) {
    this.#transport = new HttpTransport(opts);
    this.organizations = new OrganizationsApi(this.#transport);
    this.devices = new DevicesApi(this.#transport);
    this.securityGroups = new SecurityGroupsApi(this.#transport);
    this.registrationKeys = new RegistrationKeysApi(this.#transport);
    this.tokens = new TokensApi(this.#transport);
    this.auth = new AuthApi(this.#transport);
    this.members = new MembersApi(this.#transport);
    this.apiKeys = new ApiKeysApi(this.#transport);
    this.audit = new AuditApi(this.#transport);
    this.relays = new RelaysApi(this.#transport);
    this.policy = new PolicyApi(this.#transport);
  }

  get baseUrl(): string {
    return this.#transport.baseUrl;
  }

  /** `GET /api/organizations/{org}/convergence` (the same as `organizations.convergence`; `organizations.watchConvergence` streams it). */
  convergence(org: string, opts: CallOptions = {}): Promise<Convergence> {
    return this.organizations.convergence(org, opts);
  }

  /** `GET /api/replicas`: the server replicas and their leases. */
  async replicas(opts: CallOptions = {}): Promise<Replica[]> {
    const body = await this.#transport.json({ method: 'GET', path: paths.replicas(), signal: opts.signal }, listOf(isReplica), 'a list of replicas');
    return body.items;
  }

  /** The raw watch stream; see `watchEvents` in watch-events.ts for its contract. */
  watchEvents(org: string, watches: readonly Watch[], opts: WatchEventsOptions = {}): AsyncGenerator<StreamEvent, void, undefined> {
    return watchEvents(this.#transport, org, watches, opts);
  }

  /** The raw page stream (watch events, convergence, statuses); see `pageEvents` in page-events.ts. */
  pageEvents(org: string, request: PageRequest, opts: WatchEventsOptions = {}): AsyncGenerator<PageEvent, void, undefined> {
    return pageEvents(this.#transport, org, request, opts);
  }
}
