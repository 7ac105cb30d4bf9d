/**
 * Publishes the spec the device owns itself (fields its token may PATCH):
 * where peers reach it (`endpoints`), its `symmetric_nat`, and the routes it
 * requests (`advertise_cidrs`), only when they change: every PATCH takes a
 * revision and wakes every agent of the organization.
 */
import type { Logger } from 'pino';
import { ConflictError, ValidationError, type FleetplaneClient } from '../../client/index.js';
import type { DevicePatch } from '../../protocol/index.js';
import type { StunState } from '../nat/stun-state.js';
import { interfaceEndpoints, sameEndpoints, wantedSpec, type InterfaceTable, type PublishedSpec } from './endpoints.js';
import { sameRoutes } from './route-request.js';

export interface EndpointPublisherOptions {
  client: FleetplaneClient;
  org: string;
  deviceId: string;
  /** `--endpoint` values; when empty the interface addresses are published. */
  manual: readonly string[];
  /**
   * `--advertise-routes` (canonical CIDRs): the device's `advertise_cidrs`
   * are set to these when the server holds other prefixes. Undefined: this
   * publisher leaves `advertise_cidrs` alone.
   */
  advertiseRoutes?: readonly string[];
  listenPort: number;
  /** The tunnel interface, whose own addresses are never published. */
  interfaceName: string;
  logger: Logger;
  /** The machine's interfaces (default `os.networkInterfaces()`). */
  interfaces?: () => InterfaceTable;
  /** What STUN knows now (default: STUN off). */
  stun?: () => StunState;
}

/** The device's self-owned spec as the server holds it; `advertise_cidrs` undefined when unknown. */
export type OwnSpec = PublishedSpec & { advertise_cidrs?: readonly string[] | undefined };

export class EndpointPublisher {
  readonly #o: EndpointPublisherOptions;
  /** What the server holds as far as this agent knows; undefined until the first check. */
  #published: OwnSpec | undefined;
  /** The server refused `advertiseRoutes` (a 4xx): they are left out of every later check. */
  #routesRefused = false;

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
   * PATCHes the endpoints, `symmetric_nat` and `advertise_cidrs`, in one
   * request and only the fields that differ from what was last published
   * (or, at the first check, from `current`, the device as the server has
   * it). Resolves true when it PATCHed; errors are the SDK's (try again
   * later).
   */
  async check(current: OwnSpec | undefined, signal?: AbortSignal): Promise<boolean> {
    const base: OwnSpec | undefined =
      this.#published ??
      (current ? { endpoints: [...current.endpoints], symmetric_nat: current.symmetric_nat, advertise_cidrs: current.advertise_cidrs } : undefined);
    const routes = this.#routesRefused ? undefined : this.#o.advertiseRoutes;
    const wanted: OwnSpec = { ...this.wanted(base), advertise_cidrs: routes ?? base?.advertise_cidrs };
    const patch: DevicePatch = {};
    if (!base || !sameEndpoints(base.endpoints, wanted.endpoints)) patch.endpoints = wanted.endpoints;
    if (!base || base.symmetric_nat !== wanted.symmetric_nat) patch.symmetric_nat = wanted.symmetric_nat;
    if (routes !== undefined && (base?.advertise_cidrs === undefined || !sameRoutes(base.advertise_cidrs, routes))) patch.advertise_cidrs = [...routes];
    if (Object.keys(patch).length === 0) {
      this.#published = base;
      return false;
    }
    try {
      await this.#o.client.devices.update(this.#o.org, this.#o.deviceId, patch, { signal });
    } catch (err) {
      // A refused route request (e.g. 409: auto-approved, it overlaps another device's route) must not keep
      // the endpoints from being published: give up the request until the next start, and publish the rest.
      if (patch.advertise_cidrs === undefined || !(err instanceof ConflictError || err instanceof ValidationError)) throw err;
      this.#routesRefused = true;
      this.#o.logger.error({ err, advertise_cidrs: patch.advertise_cidrs }, 'the server refused the route request (--advertise-routes); it is not requested until the agent restarts');
      return this.check(current, signal);
    }
    this.#published = wanted;
    const endpoints = wanted.endpoints.map((e) => `${e.source} ${e.address}`);
    if (patch.advertise_cidrs === undefined) this.#o.logger.info({ endpoints, symmetric_nat: wanted.symmetric_nat }, 'published endpoints');
    else this.#o.logger.info({ fields: Object.keys(patch), endpoints, symmetric_nat: wanted.symmetric_nat, advertise_cidrs: patch.advertise_cidrs }, 'published endpoints and the route request');
    return true;
  }
}
