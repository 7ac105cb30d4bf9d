import { paths, type SecurityGroup, type SecurityGroupCreate, type SecurityGroupPatch } from '../protocol/wire.js';
import { Collection, type CallOptions, type ListPage, type NotModified, type PageOptions, type WriteOptions } from './collection.js';
import type { Tombstone } from './guards.js';
import type { HttpTransport } from './http-transport.js';

/** `/api/organizations/{org}/security_groups[/{id}]`. */
export class SecurityGroupsApi {
  readonly #transport: HttpTransport;

  constructor(transport: HttpTransport) {
    this.#transport = transport;
  }

  #c(org: string): Collection<SecurityGroup, SecurityGroupCreate, SecurityGroupPatch> {
    return new Collection(this.#transport, paths.securityGroups(org), (id) => paths.securityGroup(org, id), 'security group');
  }

  list(org: string, opts?: CallOptions): Promise<ListPage<SecurityGroup>> {
    return this.#c(org).list(opts);
  }
  page(org: string, opts?: PageOptions): Promise<ListPage<SecurityGroup | Tombstone>> {
    return this.#c(org).page(opts);
  }
  pages(org: string, opts?: PageOptions): AsyncGenerator<ListPage<SecurityGroup | Tombstone>, void, undefined> {
    return this.#c(org).pages(opts);
  }
  items(org: string, opts?: PageOptions): AsyncGenerator<SecurityGroup | Tombstone, void, undefined> {
    return this.#c(org).items(opts);
  }
  poll(org: string, etag: string | number, opts?: CallOptions): Promise<ListPage<SecurityGroup> | NotModified> {
    return this.#c(org).poll(etag, opts);
  }
  get(org: string, id: string, opts?: CallOptions): Promise<SecurityGroup> {
    return this.#c(org).get(id, opts);
  }
  create(org: string, body: SecurityGroupCreate, opts?: CallOptions): Promise<SecurityGroup> {
    return this.#c(org).create(body, opts);
  }
  update(org: string, id: string, patch: SecurityGroupPatch, opts?: WriteOptions): Promise<SecurityGroup> {
    return this.#c(org).update(id, patch, opts);
  }
  /** 409 ConflictError while a device still references the group. */
  delete(org: string, id: string, opts?: WriteOptions): Promise<void> {
    return this.#c(org).delete(id, opts);
  }
}
