import {
  QUERY,
  paths,
  type Device,
  type DeviceCreate,
  type DevicePatch,
  type DeviceStatus,
  type DeviceStatusInput,
  type DeviceTokenExpiry,
  type DeviceTokenRenewal,
  type EnrolledDevice,
} from '../protocol/wire.js';
import { Collection, type CallOptions, type ListPage, type NotModified, type PageOptions, type WriteOptions } from './collection.js';
import { isIdentified, isObject, isRecord, listOf, type Tombstone } from './guards.js';
import type { HttpTransport } from './http-transport.js';

export interface RpcOptions extends CallOptions {
  /** Seconds the server waits for the device to connect if it isn't (server default 20, max 120). */
  wait?: number | undefined;
}

function isEnrolled(v: unknown): v is EnrolledDevice {
  return isIdentified(v) && isRecord(v) && typeof v['device_token'] === 'string';
}

const anyJson = (v: unknown): v is unknown => v !== undefined;

const isExpiry = (v: unknown): v is DeviceTokenExpiry => isRecord(v) && typeof v['device_id'] === 'string';
const isRenewal = (v: unknown): v is DeviceTokenRenewal =>
  isRecord(v) && typeof v['device_token'] === 'string' && (v['expires_at'] === null || typeof v['expires_at'] === 'string');

export interface TokenExpiryOptions extends CallOptions {
  /** Seconds: only devices whose token expires within this from now (expired ones included). */
  expiringWithin?: number | undefined;
}

/** `/api/organizations/{org}/devices[/{id}]`, enrollment, status and RPC to agents. */
export class DevicesApi {
  readonly #transport: HttpTransport;

  constructor(transport: HttpTransport) {
    this.#transport = transport;
  }

  #c(org: string): Collection<Device, DeviceCreate, DevicePatch> {
    return new Collection(this.#transport, paths.devices(org), (id) => paths.device(org, id), 'device');
  }

  list(org: string, opts?: CallOptions): Promise<ListPage<Device>> {
    return this.#c(org).list(opts);
  }
  page(org: string, opts?: PageOptions): Promise<ListPage<Device | Tombstone>> {
    return this.#c(org).page(opts);
  }
  pages(org: string, opts?: PageOptions): AsyncGenerator<ListPage<Device | Tombstone>, void, undefined> {
    return this.#c(org).pages(opts);
  }
  items(org: string, opts?: PageOptions): AsyncGenerator<Device | Tombstone, void, undefined> {
    return this.#c(org).items(opts);
  }
  poll(org: string, etag: string | number, opts?: CallOptions): Promise<ListPage<Device> | NotModified> {
    return this.#c(org).poll(etag, opts);
  }
  get(org: string, id: string, opts?: CallOptions): Promise<Device> {
    return this.#c(org).get(id, opts);
  }
  /**
   * Creates a device with the client's (admin) token. The answer carries the
   * new device's `device_token`, shown this once: hand it to the machine.
   */
  create(org: string, body: DeviceCreate, opts?: CallOptions): Promise<EnrolledDevice> {
    return this.#c(org).createAs(body, isEnrolled, opts);
  }
  /**
   * Enrolls with a registration key as the bearer token: the answer carries
   * `device_token`, shown this once.
   */
  enroll(org: string, registrationKey: string, body: DeviceCreate, opts: CallOptions = {}): Promise<EnrolledDevice> {
    return this.#c(org).createAs(body, isEnrolled, { ...opts, token: registrationKey });
  }
  /** Setting a field owned elsewhere (tunnel_ip, mtu, status, ...) fails with ConflictError `field_owned_elsewhere`. */
  update(org: string, id: string, patch: DevicePatch, opts?: WriteOptions): Promise<Device> {
    return this.#c(org).update(id, patch, opts);
  }
  delete(org: string, id: string, opts?: WriteOptions): Promise<void> {
    return this.#c(org).delete(id, opts);
  }

  /** The device's own report (device token). Changes no revision and emits no watch event. */
  putStatus(org: string, id: string, status: DeviceStatusInput, opts: CallOptions = {}): Promise<DeviceStatus> {
    return this.#transport.json(
      { method: 'PUT', path: paths.deviceStatus(org, id), body: status, signal: opts.signal },
      isObject<DeviceStatus>(),
      'the device status',
    );
  }

  /**
   * `POST .../devices/{id}/token` with the device's own token: a new device
   * token (shown once) and its expiry. The token the call was made with
   * stays valid a few minutes more (DEVICE_TOKEN_OVERLAP_SECONDS); persist
   * the new one before using it. AuthError when the token is expired or
   * revoked (the device must enroll again), or is not this device's.
   */
  renewToken(org: string, id: string, opts: CallOptions = {}): Promise<DeviceTokenRenewal> {
    return this.#transport.json({ method: 'POST', path: paths.deviceToken(org, id), signal: opts.signal }, isRenewal, 'the renewed device token');
  }

  /**
   * `DELETE .../devices/{id}/token` (admins): expires the device's key. Every
   * token it holds is revoked, its streams and tunnel end, and its agent
   * must enroll again with a registration key; the device object stays.
   */
  async expireKey(org: string, id: string, opts: CallOptions = {}): Promise<void> {
    await this.#transport.empty({ method: 'DELETE', path: paths.deviceToken(org, id), signal: opts.signal });
  }

  /**
   * `GET .../device_tokens`: every device of the organization with its token's
   * expiry (null: never; past: expired), all pages, by device id.
   */
  async tokenExpiries(org: string, opts: TokenExpiryOptions = {}): Promise<DeviceTokenExpiry[]> {
    const out: DeviceTokenExpiry[] = [];
    let after: string | undefined;
    do {
      const page = await this.#transport.json(
        {
          method: 'GET',
          path: paths.deviceTokens(org),
          query: { [QUERY.expiringWithin]: opts.expiringWithin, [QUERY.after]: after },
          signal: opts.signal,
        },
        listOf(isExpiry),
        'a list of device token expiries',
      );
      out.push(...page.items);
      after = page.next;
    } while (after !== undefined);
    return out;
  }

  /**
   * Calls `method` on the device's agent through the server. Resolves to the
   * agent's result; AgentError `agent_not_connected` (504) when it didn't
   * connect within `wait`, `agent_error` (502) when it answered with an error.
   */
  rpc(org: string, id: string, method: string, params: Record<string, unknown> = {}, opts: RpcOptions = {}): Promise<unknown> {
    return this.#transport.json(
      { method: 'POST', path: paths.deviceRpc(org, id, method), query: { [QUERY.wait]: opts.wait }, body: params, signal: opts.signal },
      anyJson,
      'the agent result',
    );
  }
}
