import { WATCH_KINDS, type Convergence, type KindValue, type StatusSummary, type WatchKind } from '../../protocol/wire.js';
import { SharedInformers, TransportError, type FleetplaneClient, type StatusesUpdate } from '../../client/index.js';
import type { HubMessage, KindSnapshot } from './page-messages.js';

type Listener = (m: HubMessage) => void;

/**
 * One organization followed for every tab that shows it: one page stream
 * (informers of every kind, the convergence and device statuses), and what
 * it brought so far, handed to each tab as a snapshot when it joins and as
 * events after. Memory: the organization's objects and one status per
 * device, as a single tab would hold them.
 */
class OrgFollow {
  readonly informers: SharedInformers;
  readonly #listeners = new Set<Listener>();
  readonly #statuses = new Map<string, StatusSummary>();
  #convergence: Convergence | undefined;
  #failed: string | undefined;

  constructor(
    client: FleetplaneClient,
    readonly org: string,
  ) {
    this.informers = new SharedInformers(client, org, {
      page: {
        convergence: (value) => {
          this.#convergence = value;
          this.#send({ t: 'convergence', org, value });
        },
        statuses: (u) => this.#onStatuses(u),
      },
    });
    for (const kind of WATCH_KINDS) {
      const inf = this.informers.informer(kind);
      inf.onAdd((object) => this.#send({ t: 'add', org, kind, object }));
      inf.onUpdate((_old, object) => this.#send({ t: 'update', org, kind, object }));
      inf.onDelete((object) => this.#send({ t: 'delete', org, kind, object }));
      inf.waitForSync().then(
        () => this.#send({ t: 'synced', org, kind }),
        // Stopped or failed: the status handler below says so once for all kinds.
        () => undefined,
      );
    }
    this.informers.onStatus((s) => {
      if (s.type === 'retrying' && s.error instanceof TransportError) this.#send({ t: 'connection', org, ok: false });
      else if (s.type === 'syncing' || s.type === 'synced') this.#send({ t: 'connection', org, ok: true });
      else if (s.type === 'failed') {
        this.#failed = s.error.message;
        this.#send({ t: 'failed', org, message: s.error.message });
      }
    });
    this.informers.start();
  }

  #onStatuses(u: StatusesUpdate): void {
    if (u.reset) this.#statuses.clear();
    for (const s of u.items) this.#statuses.set(s.id, s);
    for (const id of u.removed) this.#statuses.delete(id);
    this.#send({ t: 'statuses', org: this.org, reset: u.reset, items: u.items, removed: u.removed });
  }

  #send(m: HubMessage): void {
    for (const l of this.#listeners) l(m);
  }

  join(listener: Listener): void {
    const kinds = {} as { [K in WatchKind]: KindSnapshot<K> };
    for (const kind of WATCH_KINDS) {
      const inf = this.informers.informer(kind);
      Object.assign(kinds, { [kind]: { items: inf.list() as KindValue[typeof kind][], synced: inf.hasSynced() } });
    }
    listener({ t: 'snapshot', org: this.org, kinds, convergence: this.#convergence, statuses: [...this.#statuses.values()], failed: this.#failed });
    this.#listeners.add(listener);
  }

  get failed(): boolean {
    return this.#failed !== undefined;
  }

  /** The tabs that follow it. */
  get listeners(): readonly Listener[] {
    return [...this.#listeners];
  }

  /** True when no tab is left. */
  leave(listener: Listener): boolean {
    this.#listeners.delete(listener);
    return this.#listeners.size === 0;
  }

  stop(): void {
    void this.informers.stop();
  }
}

/**
 * Every organization some tab follows, each with one page stream however
 * many tabs show it (docs/protocol.md "Page stream"). It runs in a
 * SharedWorker, so all tabs of a browser share it, or in the page itself
 * where SharedWorker is missing.
 */
export class PageHub {
  readonly #orgs = new Map<string, OrgFollow>();

  constructor(private readonly client: FleetplaneClient) {}

  follow(org: string, listener: Listener): void {
    let f = this.#orgs.get(org);
    if (f?.failed) {
      // Stopped for good (a session that ended): a tab following again, signed in anew, starts it over for every tab.
      const held = f.listeners;
      f.stop();
      f = new OrgFollow(this.client, org);
      this.#orgs.set(org, f);
      for (const l of held) f.join(l);
    }
    if (!f) {
      f = new OrgFollow(this.client, org);
      this.#orgs.set(org, f);
    }
    f.join(listener);
  }

  leave(org: string, listener: Listener): void {
    const f = this.#orgs.get(org);
    if (f?.leave(listener)) {
      f.stop();
      this.#orgs.delete(org);
    }
  }

  /** Organizations followed (for tests and diagnostics). */
  get followed(): readonly string[] {
    return [...this.#orgs.keys()];
  }
}
