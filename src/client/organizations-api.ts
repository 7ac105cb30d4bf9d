import { paths, type Organization, type OrganizationCreate, type OrganizationPatch } from '../protocol/index.js';
import { Collection, type CallOptions, type ListPage, type NotModified, type PageOptions, type WriteOptions } from './collection.js';
import type { Tombstone } from './guards.js';
import type { HttpTransport } from './http-transport.js';

/** `/api/organizations[/{org}]`. */
export class OrganizationsApi {
  readonly #c: Collection<Organization, OrganizationCreate, OrganizationPatch>;

  constructor(transport: HttpTransport) {
    this.#c = new Collection(transport, paths.organizations(), (id) => paths.organization(id), 'organization');
  }

  /** Every organization the token can see. */
  list(opts?: CallOptions): Promise<ListPage<Organization>> {
    return this.#c.list(opts);
  }
  page(opts?: PageOptions): Promise<ListPage<Organization | Tombstone>> {
    return this.#c.page(opts);
  }
  pages(opts?: PageOptions): AsyncGenerator<ListPage<Organization | Tombstone>, void, undefined> {
    return this.#c.pages(opts);
  }
  items(opts?: PageOptions): AsyncGenerator<Organization | Tombstone, void, undefined> {
    return this.#c.items(opts);
  }
  poll(etag: string | number, opts?: CallOptions): Promise<ListPage<Organization> | NotModified> {
    return this.#c.poll(etag, opts);
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
