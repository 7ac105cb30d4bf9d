import { paths, type Convergence, type CreatedOrganization, type Organization, type OrganizationCreate, type OrganizationPatch } from '../protocol/wire.js';
import { Collection, type CallOptions, type ListPage, type WriteOptions } from './collection.js';
import { followConvergence, type FollowConvergenceOptions } from './convergence-follow.js';
import { watchConvergence, type WatchConvergenceOptions } from './convergence-watch.js';
import { isObject, isRecord } from './guards.js';
import type { HttpTransport } from './http-transport.js';

/**
 * `/api/organizations[/{org}]`. The organization list has no paging, no
 * `gt_revision` and no ETag (organizations share no revision counter; see
 * docs/protocol.md "Lists"), so there is no `page`/`pages`/`items`/`poll` here.
 */
export class OrganizationsApi {
  readonly #c: Collection<Organization, OrganizationCreate, OrganizationPatch>;
  readonly #transport: HttpTransport;

  constructor(transport: HttpTransport) {
    this.#transport = transport;
    this.#c = new Collection(transport, paths.organizations(), (id) => paths.organization(id), 'organization');
  }

  /** Every organization the token can see. */
  list(opts?: CallOptions): Promise<ListPage<Organization>> {
    return this.#c.list(opts);
  }
  get(org: string, opts?: CallOptions): Promise<Organization> {
    return this.#c.get(org, opts);
  }
  /**
   * Creates an organization. Its `owner_invitation`, when the server made one
   * (the admin token naming no owner, or `owner_email`), carries the token the
   * owner accepts it with (`members.acceptInvitation`), shown this once.
   */
  create(body: OrganizationCreate, opts?: CallOptions): Promise<CreatedOrganization> {
    return this.#c.createAs(body, (v: unknown): v is CreatedOrganization => isRecord(v) && typeof v['id'] === 'string', opts);
  }
  update(org: string, patch: OrganizationPatch, opts?: WriteOptions): Promise<Organization> {
    return this.#c.update(org, patch, opts);
  }
  delete(org: string, opts?: WriteOptions): Promise<void> {
    return this.#c.delete(org, opts);
  }

  /**
   * `GET /api/organizations/{org}/convergence`: the counts once. Only the
   * shape of an object is checked (servers before `online` answer without it).
   */
  convergence(org: string, opts: CallOptions = {}): Promise<Convergence> {
    return this.#transport.json({ method: 'GET', path: paths.convergence(org), signal: opts.signal }, isObject<Convergence>(), 'convergence counts');
  }

  /** The convergence as a stream over one connection; see `watchConvergence` in convergence-watch.ts for its contract. */
  watchConvergence(org: string, opts: WatchConvergenceOptions = {}): AsyncGenerator<Convergence, void, undefined> {
    return watchConvergence(this.#transport, org, opts);
  }

  /** The convergence stream, reconnecting until `opts.signal` aborts; see `followConvergence` in convergence-follow.ts. */
  followConvergence(org: string, opts: FollowConvergenceOptions): AsyncGenerator<Convergence, void, undefined> {
    return followConvergence(this.#transport, org, opts);
  }
}
