import type { Database } from '../db/index.js';
import type { SignalBus } from '../bus/index.js';
import { applyPolicy, readPolicy, releasePolicy, type ApplyOptions } from './policy-documents.js';

/** An organization's policy document (docs/protocol.md "Policy document"). */
export class PolicyRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly bus: SignalBus,
  ) {
    this.#db = db;
  }

  /** The document as sent, or one generated from the objects when none manages the organization. */
  get = (orgId: string) => readPolicy(this.#db, orgId);
  /** Applies a document's text as one revision (or only checks it: `dryRun`). */
  apply = (orgId: string, text: string, options?: ApplyOptions) => applyPolicy(this.#db, this.bus, orgId, text, options);
  /** Hands access back to the objects. */
  release = (orgId: string) => releasePolicy(this.#db, this.bus, orgId);
}
