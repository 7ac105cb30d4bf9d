import type { Database } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import type { SecurityGroupCreate, SecurityGroupPatch } from '../../protocol/index.js';
import * as groups from './security-groups.js';

/** Security groups of an organization. Members are bound, so they may be passed as callbacks. */
export class SecurityGroupRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly bus: SignalBus,
  ) {
    this.#db = db;
  }

  create = (orgId: string, input: SecurityGroupCreate) => groups.createSecurityGroup(this.#db, this.bus, orgId, input);
  get = (orgId: string, id: string) => groups.getSecurityGroup(this.#db, orgId, id);
  /** `ifMatch`: the revision the caller last read; a newer one refuses the patch. */
  patch = (orgId: string, id: string, patch: SecurityGroupPatch, ifMatch?: string) =>
    groups.patchSecurityGroup(this.#db, this.bus, orgId, id, patch, ifMatch);
  delete = (orgId: string, id: string, ifMatch?: string) => groups.deleteSecurityGroup(this.#db, this.bus, orgId, id, ifMatch);
}
