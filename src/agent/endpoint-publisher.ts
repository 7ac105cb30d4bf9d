/**
 * Publishes where peers reach this device into its own `endpoints` (spec the
 * device token may PATCH), only when they change: every PATCH takes a
 * revision and wakes every agent of the organization.
 */
import type { Logger } from 'pino';
import type { FleetplaneClient } from '../client/index.js';
import type { Endpoint } from '../protocol/index.js';
import { interfaceEndpoints, publishedEndpoints, sameEndpoints, type InterfaceTable } from './endpoints.js';

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
}

export class EndpointPublisher {
  readonly #o: EndpointPublisherOptions;
  /** What the server holds as far as this agent knows; undefined until the first check. */
  #published: Endpoint[] | undefined;

  constructor(options: EndpointPublisherOptions) {
    this.#o = options;
  }

  /** `ip:port` of this machine's usable addresses with the listen port (the status' `local_endpoints`). */
  localEndpoints(): string[] {
    const table = this.#o.interfaces?.();
    return interfaceEndpoints(this.#o.listenPort, this.#o.interfaceName, table);
  }

  /** What this device should publish now. */
  wanted(): Endpoint[] {
    return publishedEndpoints(this.#o.manual, this.#o.manual.length > 0 ? [] : this.localEndpoints());
  }

  /**
   * PATCHes the endpoints when they differ from what was last published (or,
   * at the first check, from `current`, the device as the server has it).
   * Resolves true when it PATCHed; errors are the SDK's (try again later).
   */
  async check(current: readonly Endpoint[] | undefined, signal?: AbortSignal): Promise<boolean> {
    const wanted = this.wanted();
    const base = this.#published ?? (current ? [...current] : undefined);
    if (base && sameEndpoints(base, wanted)) {
      this.#published = base;
      return false;
    }
    await this.#o.client.devices.update(this.#o.org, this.#o.deviceId, { endpoints: wanted }, { signal });
    this.#published = wanted;
    this.#o.logger.info({ endpoints: wanted.map((e) => e.address) }, 'published endpoints');
    return true;
  }
}
