import type { Database } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type { OrganizationCreate, OrganizationPatch } from '../../protocol/index.js';
import * as orgs from './organizations.js';
import type { TokenIndex } from './token-index.js';
import { afterCommit } from './token-index-change.js';

/**
 * Organizations: the tenants everything else is stored under. Members are
 * bound, so they may be passed as callbacks.
 */
export class OrganizationRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly bus: SignalBus,
    private readonly tokens: TokenIndex,
  ) {
    this.#db = db;
  }

  /** A user creating it becomes its owner (default: the admin token); see createOrganization for the owners and the owner invitation. */
  create = (input: OrganizationCreate, creator: orgs.OrganizationCreator = { admin: true }) => orgs.createOrganization(this.#db, input, creator);
  get = (id: string) => orgs.getOrganization(this.#db, id);
  /** Every organization, or only `only` when given. */
  list = (only?: string) => orgs.listOrganizations(this.#db, only);
  /** `ifMatch`: the revision the caller last read; a newer one refuses the patch. `writer`: may it rename (default: yes). */
  patch = (id: string, patch: OrganizationPatch, ifMatch?: string, writer?: orgs.OrganizationWriter) =>
    orgs.patchOrganization(this.#db, this.bus, id, patch, ifMatch, writer);
  /** Deletes it with everything in it; its tokens stop authenticating once the deletion committed. */
  delete = (id: string, ifMatch?: string) =>
    afterCommit(this.tokens, orgs.deleteOrganization(this.#db, this.bus, id, ifMatch), () => ({ orgDeleted: id }));
}
