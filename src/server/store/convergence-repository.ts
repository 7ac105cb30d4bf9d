import type { Database } from '../db/index.js';
import { convergence } from './convergence.js';
import { ConvergenceView } from './convergence-view.js';
import { deviceTotals } from './device-totals.js';

/**
 * How far devices have applied their organization's desired state. Members
 * are bound, so they may be passed as callbacks.
 */
export class ConvergenceRepository {
  readonly #db: Database;

  constructor(
    db: Database,
    private readonly staleAfterSeconds: number,
  ) {
    this.#db = db;
  }

  /** An organization's convergence now (see convergence.ts). */
  of = (orgId: string) => convergence(this.#db, orgId, this.staleAfterSeconds);
  /** An organization's convergence kept in memory, each read fetching only what changed (for followers). */
  view = (orgId: string) => {
    const view = new ConvergenceView(orgId, this.staleAfterSeconds);
    const db = this.#db;
    return {
      read: () => view.read(db),
      followStatuses: () => view.followStatuses(),
      get statusReads() {
        return view.statusReads;
      },
      allStatuses: () => view.allStatuses(),
      takeStatusChanges: () => view.takeStatusChanges(),
    };
  };
  /** Devices of all organizations by convergence state (one statement over every device: cache it). */
  deviceTotals = () => deviceTotals(this.#db, this.staleAfterSeconds);
}
