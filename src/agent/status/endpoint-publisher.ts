/**
 * Publishes where peers reach this device into its own `endpoints`, and its
 * `symmetric_nat` (spec the device token may PATCH), only when they change:
 * every PATCH takes a revision and wakes every agent of the organization.
 */
import type { Logger } from 'pino';
import type { FleetplaneClient } from '../../client/index.js';
import type { DevicePatch } from '../../protocol/index.js';
import type { StunState } from '../nat/stun-state.js';
import { interfaceEndpoints, sameEndpoints, wantedSpec, type InterfaceTable, type PublishedSpec } from './endpoints.js';

export interface EndpointPublisherOptions {
  client: FleetplaneClient;
  org: string;
  deviceId: string;
  /** `--endpoint` values; when empty the interface addresses are published. */
  manual: readonly string[];
  listenPort: number;
  /** The tunnel interface, whose own addresses are never published. */
  interfaceName: string;
  logger: Logger;
  /** The machine's interfaces (default `os.networkInterfaces()`). */
  interfaces?: () => InterfaceTable;
  /** What STUN knows now (default: STUN off). */
  stun?: () => StunState;
}

export class EndpointPublisher {
  readonly #o: EndpointPublisherOptions;
  /** What the server holds as far as this agent knows; undefined until the first check. */
  #published: PublishedSpec | undefined;

  constructor(options: EndpointPublisherOptions) {
    this.#o = options;
  }

  /** `ip:port` of this machine's usable addresses with the listen port (the status' `local_endpoints`). */
  localEndpoints(): string[] {
    const table = this.#o.interfaces?.();
    return interfaceEndpoints(this.#o.listenPort, this.#o.interfaceName, table);
  }

  /** What this device should publish now, given what the server holds (`base`, see wantedSpec). */
  wanted(base?: PublishedSpec): PublishedSpec {
    const stun = this.#o.stun?.() ?? { kind: 'off' };
    return wantedSpec(this.#o.manual, this.#o.manual.length > 0 ? [] : this.localEndpoints(), stun, base);
  }

  /**
   * PATCHes the endpoints and `symmetric_nat`, in one request and only the
   * fields that differ from what was last published (or, at the first
   * check, from `current`, the device as the server has it). Resolves true
   * when it PATCHed; errors are the SDK's (try again later).
   */
  async check(current: PublishedSpec | undefined, signal?: AbortSignal): Promise<boolean> {
    const base = this.#published ?? (current ? { endpoints: [...current.endpoints], symmetric_nat: current.symmetric_nat } : undefined);
    const wanted = this.wanted(base);
    const patch: DevicePatch = {};
    if (!base || !sameEndpoints(base.endpoints, wanted.endpoints)) patch.endpoints = wanted.endpoints;
    if (!base || base.symmetric_nat !== wanted.symmetric_nat) patch.symmetric_nat = wanted.symmetric_nat;
    if (patch.endpoints === undefined && patch.symmetric_nat === undefined) {
      this.#published = base;
      return false;
    }
    await this.#o.client.devices.update(this.#o.org, this.#o.deviceId, patch, { signal });
    this.#published = wanted;
    this.#o.logger.info({ endpoints: wanted.endpoints.map((e) => `${e.source} ${e.address}`), symmetric_nat: wanted.symmetric_nat }, 'published endpoints');
    return true;
  }
}
