import { equalJitterDelay } from '../../util/backoff.js';
import { requestJson } from './http-json.js';
import { IdentityError } from './identity-error.js';
import { discoveryUrl, parseIssuerMetadata, type IssuerMetadata } from './issuer-metadata.js';
import type { OidcSettings } from './oidc-settings.js';

const MAX_DISCOVERY_BYTES = 256 * 1024;

interface Held {
  readonly metadata: IssuerMetadata;
  readonly fetchedAt: number;
}

/**
 * The issuer's discovery document, read at most once per `discoveryTtlMs`; callers meanwhile
 * share the last one, and concurrent callers share one read. After the n-th failed read in a row
 * (n from 0) the next read waits a backoff uniform in [c/2, c), c = min(retryCapMs,
 * retryBaseMs·2^n), so a down issuer is never asked again at once; until then callers get
 * the last good document if it is at most `discoveryMaxStaleMs` past its TTL (the failure is
 * logged), else the failure itself. One document is held: the cache is bounded by construction.
 */
export class DiscoveryCache {
  #held: Held | undefined;
  #inflight: Promise<IssuerMetadata> | undefined;
  /** Failed reads in a row. */
  #failures = 0;
  /** Set by a failed read: until `until`, callers get `error` (or the stale document) without a read. */
  #backoff: { readonly until: number; readonly error: IdentityError } | undefined;

  constructor(private readonly settings: OidcSettings) {}

  /** The metadata, fresh or (while the issuer can't be reached) stale within bounds. */
  async get(): Promise<IssuerMetadata> {
    const now = this.settings.now();
    const held = this.#held;
    if (held && now - held.fetchedAt < this.settings.discoveryTtlMs) return held.metadata;
    const backoff = this.#backoff;
    if (backoff && now < backoff.until) return this.#staleOr(backoff.error, now, false);
    this.#inflight ??= this.#read().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  async #read(): Promise<IssuerMetadata> {
    const url = discoveryUrl(this.settings.issuer);
    try {
      const answer = await requestJson(this.settings, url, { method: 'GET', what: 'discovery document', maxBytes: MAX_DISCOVERY_BYTES });
      if (answer.status !== 200) {
        throw new IdentityError('discovery_failed', `the discovery document ${url} answered HTTP ${answer.status}`, { status: answer.status });
      }
      const metadata = parseIssuerMetadata(answer.body, this.settings.issuer);
      this.#held = { metadata, fetchedAt: this.settings.now() };
      this.#failures = 0;
      this.#backoff = undefined;
      return metadata;
    } catch (err) {
      const failure =
        err instanceof IdentityError && err.code === 'discovery_failed'
          ? err
          : new IdentityError('discovery_failed', `the discovery document ${url} could not be read: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      const now = this.settings.now();
      this.#backoff = { until: now + equalJitterDelay(this.#failures, this.settings.retryBaseMs, this.settings.retryCapMs), error: failure };
      this.#failures += 1;
      return this.#staleOr(failure, now, true);
    }
  }

  /** The held document if within its stale bound, else throws `failure`; `log`: once per failed read, not per caller. */
  #staleOr(failure: IdentityError, now: number, log: boolean): IssuerMetadata {
    const held = this.#held;
    if (held && now - held.fetchedAt < this.settings.discoveryTtlMs + this.settings.discoveryMaxStaleMs) {
      if (log) this.settings.logger.warn(
        { err: failure, issuer: this.settings.issuer, ageMs: now - held.fetchedAt },
        'OIDC discovery document could not be refreshed; using the last one read',
      );
      return held.metadata;
    }
    throw failure;
  }
}
