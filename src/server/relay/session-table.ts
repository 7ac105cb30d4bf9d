import type { RelaySession } from './relay-session.js';

/**
 * This replica's relay sessions by id (organization and key): one per
 * device. Adding a session under an id already held returns the older one,
 * which the caller closes (4001); removing a session that was replaced
 * leaves its successor in place.
 */
export class SessionTable {
  readonly #byId = new Map<string, RelaySession>();

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): RelaySession | undefined {
    return this.#byId.get(id);
  }

  has(id: string): boolean {
    return this.#byId.has(id);
  }

  /** The ids held here now. */
  ids(): string[] {
    return [...this.#byId.keys()];
  }

  all(): IterableIterator<RelaySession> {
    return this.#byId.values();
  }

  /** Holds `session` under its id; returns the session it replaces, if any. */
  add(session: RelaySession): RelaySession | undefined {
    const older = this.#byId.get(session.id);
    this.#byId.set(session.id, session);
    return older === session ? undefined : older;
  }

  /** Forgets `session` if it is still the one held under its id; true when it was. */
  remove(session: RelaySession): boolean {
    if (this.#byId.get(session.id) !== session) return false;
    this.#byId.delete(session.id);
    return true;
  }
}
