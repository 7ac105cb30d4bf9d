/** Heads remembered per organization: ACKs of older revisions are not timed. */
export const FAN_OUT_WINDOW = 64;

interface OrgTimes {
  /** Revisions at or below it were fanned out before the window (or before this replica's feed existed). */
  floor: number;
  /** Heads in increasing order, and when each reached the tail cache. */
  readonly heads: number[];
  readonly times: number[];
}

/**
 * When each organization's recent heads reached this replica's tail cache
 * (the start of their fan-out), so that a device's ACK of a revision can be
 * timed from it. Memory: at most FAN_OUT_WINDOW heads per organization with a
 * tail cache; an organization is forgotten when its cache is dropped.
 */
export class FanOutTimes {
  readonly #orgs = new Map<string, OrgTimes>();

  /** The tail cache of `orgId` moved from `from` to `head` at `at` (performance.now()). */
  reached(orgId: string, from: number, head: number, at: number): void {
    let org = this.#orgs.get(orgId);
    if (!org) {
      org = { floor: from, heads: [], times: [] };
      this.#orgs.set(orgId, org);
    }
    if (head <= Math.max(org.floor, org.heads.at(-1) ?? 0)) return;
    org.heads.push(head);
    org.times.push(at);
    if (org.heads.length > FAN_OUT_WINDOW) {
      org.floor = org.heads.shift() ?? org.floor;
      org.times.shift();
    }
  }

  /**
   * When `revision` of `orgId` was first fanned out from here: the time of
   * the first head at or above it. Undefined when it is older than the
   * window, newer than the head, or the organization has no tail cache here.
   */
  timeOf(orgId: string, revision: number): number | undefined {
    const org = this.#orgs.get(orgId);
    if (!org || revision <= org.floor) return undefined;
    // A loop, not findIndex: this runs once per ACK, and a closure per call is a fleet's worth of garbage.
    for (let i = 0; i < org.heads.length; i++) if (org.heads[i]! >= revision) return org.times[i];
    return undefined;
  }

  /** The organization's tail cache was dropped: its heads are no longer followed here. */
  forget(orgId: string): void {
    this.#orgs.delete(orgId);
  }
}
