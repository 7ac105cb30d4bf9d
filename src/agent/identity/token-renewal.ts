/**
 * The device token over time (docs/protocol.md "Device tokens over time"):
 * the agent renews its token before it expires, with no operator action,
 * persists the new one before using it, and moves its connections to it.
 */
import type { Logger } from 'pino';
import { AuthError, NotFoundError, retryAfterOf, type DeviceTokenRenewal, type FleetplaneClient } from '../../client/index.js';
import { Backoff } from '../../util/backoff.js';
import { AgentFatalError, errorMessage } from '../errors.js';
import type { DeviceIdentity, StateDir } from './state-dir.js';
import { logRetry } from '../transient.js';
import { sleep } from '../../util/sleep.js';
import { accepted, checkTokenRenewal } from '../received/index.js';

/** A token is renewed once this share of its lifetime has passed, less up to RENEW_JITTER of it. */
export const RENEW_AT = 2 / 3;
/** Spreads the renewals of a fleet enrolled together over a tenth of the lifetime. */
export const RENEW_JITTER = 0.1;

const RETRY_BACKOFF = { initialMs: 1_000, maxMs: 60_000, resetAfterMs: Number.MAX_SAFE_INTEGER };
/** Longest single wait: timers past 2^31 - 1 ms fire at once, and a long wait looks at the clock again (suspend, clock steps). */
const MAX_WAIT_MS = 3_600_000;

export interface DeviceCredentialOptions {
  client: FleetplaneClient;
  stateDir: StateDir;
  identity: DeviceIdentity;
  logger: Logger;
  /** The new token is persisted and in use: move what holds the old one (watch stream, tunnel) to it. */
  onRenewed: (identity: DeviceIdentity) => void;
  /**
   * Renewing can't go on: the token was refused (AuthError: expired or
   * revoked), the device is gone (NotFoundError), or the new token could not
   * be persisted (AgentFatalError `state_dir`).
   */
  onFatal: (error: Error) => void;
  random?: () => number;
  now?: () => number;
}

/**
 * The device's current token, and the loop renewing it.
 *
 * Contract: `token` is always a token the state directory holds (a renewed
 * one is written, atomically, before `token` returns it), so a crash at any
 * point restarts with a token the server accepts (the old one stays valid
 * for the overlap). A token without a known expiry is never renewed.
 */
export class DeviceCredential {
  readonly #o: DeviceCredentialOptions;
  readonly #now: () => number;
  readonly #random: () => number;
  #identity: DeviceIdentity;
  #renewAt: number | undefined;

  constructor(o: DeviceCredentialOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
    this.#random = o.random ?? Math.random;
    this.#identity = o.identity;
    this.#renewAt = this.#schedule(o.identity);
  }

  get token(): string {
    return this.#identity.device_token;
  }

  get identity(): DeviceIdentity {
    return this.#identity;
  }

  /** When the current token will be renewed (ms since the epoch); undefined: never. */
  get renewAt(): number | undefined {
    return this.#renewAt;
  }

  /** The current token's expiry when it has passed (ms since the epoch), else undefined. */
  expiredAt(): number | undefined {
    const at = this.#identity.device_token_expires_at;
    if (at === undefined || at === null) return undefined;
    const ms = Date.parse(at);
    return ms <= this.#now() ? ms : undefined;
  }

  #schedule(identity: DeviceIdentity): number | undefined {
    const expires = identity.device_token_expires_at;
    const issued = identity.device_token_issued_at;
    if (expires === undefined || expires === null || issued === undefined) return undefined;
    const from = Date.parse(issued);
    const to = Date.parse(expires);
    if (!Number.isFinite(from) || !Number.isFinite(to)) return undefined;
    return from + (to - from) * (RENEW_AT - RENEW_JITTER * this.#random());
  }

  /** Renews the token when due, until `signal` aborts or renewing can't go on (`onFatal`). */
  async run(signal: AbortSignal): Promise<void> {
    const { client, logger } = this.#o;
    if (this.#renewAt !== undefined) {
      logger.info({ expires_at: this.#identity.device_token_expires_at, renew_at: new Date(this.#renewAt).toISOString() }, 'the device token expires; it is renewed before');
    }
    const backoff = new Backoff(RETRY_BACKOFF, this.#random);
    while (!signal.aborted) {
      const at = this.#renewAt;
      if (at === undefined) {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        return;
      }
      const wait = at - this.#now();
      if (wait > 0) {
        await sleep(Math.min(wait, MAX_WAIT_MS), signal);
        continue;
      }
      const { organization_id: org, device_id: id } = this.#identity;
      let renewed: DeviceTokenRenewal;
      try {
        // An invalid answer is retried like a failed call: the token in use stays valid until its expiry.
        renewed = accepted(checkTokenRenewal, await client.devices.renewToken(org, id, { signal }), 'token renewal');
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof AuthError || err instanceof NotFoundError) return this.#o.onFatal(err);
        const delayMs = backoff.next(0, retryAfterOf(err));
        logRetry(logger, err, { delayMs: Math.round(delayMs) }, 'renewing the device token failed; retrying');
        await sleep(delayMs, signal);
        continue;
      }
      const next: DeviceIdentity = {
        ...this.#identity,
        device_token: renewed.device_token,
        device_token_expires_at: renewed.expires_at,
        device_token_issued_at: renewed.issued_at,
      };
      try {
        await this.#o.stateDir.saveIdentity(next);
      } catch (err) {
        return this.#o.onFatal(
          new AgentFatalError(
            'state_dir',
            `renewed the device token, but writing ${this.#o.stateDir.identityPath} failed: ${errorMessage(err)}; the previous token stays valid a few minutes: make the state directory writable and restart`,
            { cause: err },
          ),
        );
      }
      this.#identity = next;
      this.#renewAt = this.#schedule(next);
      backoff.reset();
      logger.info({ expires_at: next.device_token_expires_at, renew_at: this.#renewAt === undefined ? null : new Date(this.#renewAt).toISOString() }, 'device token renewed');
      this.#o.onRenewed(next);
    }
  }
}
