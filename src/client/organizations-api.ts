import { paths, type Organization, type OrganizationCreate, type OrganizationPatch } from '../protocol/index.js';
import { Collection, type CallOptions, type ListPage, type WriteOptions } from './collection.js';
import type { HttpTransport } from './http-transport.js';

/**
 * `/api/organizations[/{org}]`. The organization list has no paging, no
 * `gt_revision` and no ETag (organizations share no revision counter; see
 * docs/protocol-additions.md), so there is no `page`/`pages`/`items`/`poll` here.
 */
export class OrganizationsApi {
  readonly #c: Collection<Organization, OrganizationCreate, OrganizationPatch>;

  constructor(transport: HttpTransport) {
    this.#c = new Collection(transport, paths.organizations(), (id) => paths.organization(id), 'organization');
  }

  /** Every organization the token can see. */
  list(opts?: CallOptions): Promise<ListPage<Organization>> {
    return this.#c.list(opts);
  }
  get(org: string, opts?: CallOptions): Promise<Organization> {
    return this.#c.get(org, opts);
  }
  create(body: OrganizationCreate, opts?: CallOptions): Promise<Organization> {
    return this.#c.create(body, opts);
  }
  update(org: string, patch: OrganizationPatch, opts?: WriteOptions): Promise<Organization> {
    return this.#c.update(org, patch, opts);
  }
  delete(org: string, opts?: WriteOptions): Promise<void> {
    return this.#c.delete(org, opts);
  }
}
