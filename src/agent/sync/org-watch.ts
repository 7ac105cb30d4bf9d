/**
 * The agent's one shared informer stream on its organization (devices,
 * security groups, the organization), and the revision its caches are
 * consistent with.
 */
import type { Logger } from 'pino';
import { SharedInformers, type FleetplaneClient, type Informer, type InformersState, type InformerStatus } from '../../client/index.js';
import type { InformerStateFile } from './informer-state-file.js';
import { InformerStateSaver } from './informer-state-saver.js';
import type { Snapshot } from './snapshot.js';
import { logRetry } from '../transient.js';
import type { DeviceObject } from '../../protocol/index.js';
import { checkDevice } from '../received/index.js';

export interface OrgWatchOptions {
  client: FleetplaneClient;
  org: string;
  deviceId: string;
  logger: Logger;
  /** Something changed, or the caches just became consistent again (coalesce on your side). */
  onChange: () => void;
  /** The stream stopped for good (401/403/404: token revoked, device or organization gone). */
  onFatal: (error: Error) => void;
  /** This device was deleted from the organization. */
  onOwnDelete: () => void;
  /** Where the informers' state is kept between starts (see `restore()`); without it every start lists from 0. */
  stateFile?: InformerStateFile | undefined;
  /** Least time between two saves of the state while changes arrive (default 5 s). */
  saveIntervalMs?: number | undefined;
}

/**
 * Why the revision is sound: a tail carries the organization's head when the
 * stream reached it; after every kind's tail, events of all kinds arrive in
 * revision order; a bookmark says nothing at or below it is unseen. So once
 * every kind reached its tail, the highest revision any kind has seen is a
 * revision the three caches together are consistent with, and it is the
 * organization's head as of the last event or bookmark processed. While a
 * kind lists again (after `revision_compacted`) its cache is partial: no
 * snapshot is given until the stream is `synced` again. A state restored
 * from the state file was saved while every kind was at its tail, so it is
 * consistent from the start, before the stream is even accepted.
 */
export class OrgWatch {
  readonly shared: SharedInformers;
  readonly organizations: Informer<'organization'>;
  readonly devices: Informer<'device'>;
  readonly groups: Informer<'security-group'>;
  readonly #o: OrgWatchOptions;
  #consistent = false;
  /** The state this start was seeded with. */
  #restored: InformersState | undefined;
  #saver: InformerStateSaver | undefined;
  #saving: Promise<void> | undefined;

  constructor(options: OrgWatchOptions) {
    this.#o = options;
    this.shared = new SharedInformers(options.client, options.org, { logger: options.logger });
    this.organizations = this.shared.informer('organization');
    this.devices = this.shared.informer('device');
    this.groups = this.shared.informer('security-group');
    this.devices.onDelete((device) => {
      if (device.id === options.deviceId) options.onOwnDelete();
    });
    this.shared.onStatus((status) => this.#status(status));
    this.shared.onError((error, context) => {
      if (context.source === 'stream' && context.fatal) options.onFatal(error);
      else if (context.source === 'handler') options.logger.error({ err: error, kind: context.kind }, 'an informer handler failed');
      else logRetry(options.logger, error, {}, 'watch stream interrupted; resuming');
    });
  }

  /**
   * Before `start()`: seeds the informers from the state file when it holds
   * a usable state of this organization with every kind at its tail. The
   * first watch then resumes from the saved revision (only what changed
   * since comes), and the reconcile loop starts from the saved desired
   * state at once. Never throws: an unusable file is logged and ignored.
   */
  async restore(): Promise<void> {
    const file = this.#o.stateFile;
    if (!file) return;
    const state = await file.load();
    if (!state) return;
    const log = this.#o.logger;
    const kinds = [state.organization, state.device, state['security-group']];
    if (!kinds.every((k) => k?.atTail) || !state.organization?.objects.some((o) => o.id === this.#o.org)) {
      log.warn({ path: file.path }, 'ignoring the saved informer state: it lacks a kind or the organization; listing the organization from the start');
      return;
    }
    try {
      this.shared.seed(state);
    } catch (err) {
      log.warn({ err, path: file.path }, 'ignoring the saved informer state; listing the organization from the start');
      return;
    }
    this.#restored = state;
    this.#consistent = true;
    log.info(
      { revision: this.revision(), devices: state.device?.objects.length, security_groups: state['security-group']?.objects.length },
      'resuming the watch from the saved informer state',
    );
  }

  /** Starts the stream, the change loops and the saving of the state; everything stops when `signal` aborts. */
  start(signal: AbortSignal): void {
    // One listener on the caller's signal for the three loops, not one each.
    const follow = new AbortController();
    signal.addEventListener('abort', () => follow.abort(signal.reason), { once: true });
    for (const informer of [this.organizations, this.devices, this.groups] as const) void this.#follow(informer, follow.signal);
    const file = this.#o.stateFile;
    if (file) {
      const saver = new InformerStateSaver({
        snapshot: () => this.shared.snapshot(),
        save: (state) => file.save(state),
        saved: this.#restored,
        intervalMs: this.#o.saveIntervalMs,
        logger: this.#o.logger,
      });
      this.#saver = saver;
      this.#saving = saver.run(signal);
    }
    this.shared.start(signal);
    // The restored caches are consistent already: reconcile from them without waiting for the server.
    if (this.#restored) this.#o.onChange();
  }

  async #follow(informer: Informer<'organization'> | Informer<'device'> | Informer<'security-group'>, signal: AbortSignal): Promise<void> {
    for await (const _ of informer.changes(signal)) this.#changed();
  }

  #changed(): void {
    this.#o.onChange();
    this.#saver?.request();
  }

  #status(status: InformerStatus): void {
    if (status.type === 'synced') {
      const was = this.#consistent;
      this.#consistent = true;
      // Also the end of a relist: its result is saved.
      if (!was) this.#changed();
    } else if (status.type === 'syncing') this.#consistent = false;
  }

  waitForSync(signal: AbortSignal): Promise<void> {
    return this.shared.waitForSync(signal);
  }

  status(): InformerStatus {
    return this.shared.status();
  }

  /** Connected and following changes. */
  get connected(): boolean {
    return this.shared.status().type === 'synced';
  }

  /** The revision the caches are consistent with, or undefined while they aren't (see the class comment). */
  revision(): number | undefined {
    if (!this.#consistent) return undefined;
    const revision = Math.max(this.organizations.revision(), this.devices.revision(), this.groups.revision());
    return revision > 0 ? revision : undefined;
  }

  /** A device as the watch has it, when it matches the protocol's schema; undefined otherwise, or before it is known. */
  device(id: string): DeviceObject | undefined {
    const raw = this.devices.get(id);
    if (raw === undefined) return undefined;
    const checked = checkDevice(raw);
    return checked.ok ? checked.value : undefined;
  }

  /** The caches as a snapshot; undefined while inconsistent or before the organization is known. */
  snapshot(): Snapshot | undefined {
    const revision = this.revision();
    if (revision === undefined) return undefined;
    const organization = this.organizations.get(this.#o.org);
    if (!organization) return undefined;
    return { revision, organization, devices: this.devices.list(), securityGroups: this.groups.list(), source: 'watch' };
  }

  /** Stops the stream and waits for the last save of the state (started when the `start` signal aborted). */
  async stop(): Promise<void> {
    await this.shared.stop();
    await this.#saving;
  }
}
