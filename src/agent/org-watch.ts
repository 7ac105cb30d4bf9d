/**
 * The agent's one shared informer stream on its organization (devices,
 * security groups, the organization), and the revision its caches are
 * consistent with.
 */
import type { Logger } from 'pino';
import { SharedInformers, type FleetplaneClient, type Informer, type InformerStatus } from '../client/index.js';
import type { Snapshot } from './snapshot.js';

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
}

/**
 * Why the revision is sound: a tail carries the organization's head when the
 * stream reached it; after every kind's tail, events of all kinds arrive in
 * revision order; a bookmark says nothing at or below it is unseen. So once
 * every kind reached its tail, the highest revision any kind has seen is a
 * revision the three caches together are consistent with, and it is the
 * organization's head as of the last event or bookmark processed. While a
 * kind lists again (after `revision_compacted`) its cache is partial: no
 * snapshot is given until the stream is `synced` again.
 */
export class OrgWatch {
  readonly shared: SharedInformers;
  readonly organizations: Informer<'organization'>;
  readonly devices: Informer<'device'>;
  readonly groups: Informer<'security-group'>;
  readonly #o: OrgWatchOptions;
  #consistent = false;

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
      else options.logger.warn({ err: error }, 'watch stream interrupted; resuming');
    });
  }

  /** Starts the stream and the change loops; everything stops when `signal` aborts. */
  start(signal: AbortSignal): void {
    for (const informer of [this.organizations, this.devices, this.groups] as const) void this.#follow(informer, signal);
    this.shared.start(signal);
  }

  async #follow(informer: Informer<'organization'> | Informer<'device'> | Informer<'security-group'>, signal: AbortSignal): Promise<void> {
    for await (const _ of informer.changes(signal)) this.#o.onChange();
  }

  #status(status: InformerStatus): void {
    if (status.type === 'synced') {
      const was = this.#consistent;
      this.#consistent = true;
      if (!was) this.#o.onChange();
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

  /** The caches as a snapshot; undefined while inconsistent or before the organization is known. */
  snapshot(): Snapshot | undefined {
    const revision = this.revision();
    if (revision === undefined) return undefined;
    const organization = this.organizations.get(this.#o.org);
    if (!organization) return undefined;
    return { revision, organization, devices: this.devices.list(), securityGroups: this.groups.list(), source: 'watch' };
  }

  stop(): Promise<void> {
    return this.shared.stop();
  }
}
