import type { Database } from '../db/index.js';
import { listReplicas } from '../replicas/index.js';

/** The replicas sharing this database. Members are bound, so they may be passed as callbacks. */
export class ReplicaRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** The replicas whose lease is live. */
  list = () => listReplicas(this.#db);
}
