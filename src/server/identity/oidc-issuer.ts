import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose';
import { DiscoveryCache } from './discovery-cache.js';
import { readBounded } from './http-json.js';
import type { IssuerMetadata } from './issuer-metadata.js';
import type { OidcSettings } from './oidc-settings.js';

const MAX_JWKS_BYTES = 512 * 1024;

/**
 * The configured OpenID provider as fleetplane sees it: its discovery document (cached, see
 * DiscoveryCache) and its signing keys. The keys come from jose's remote JWKS set: fetched on
 * first use, trusted for `jwksCacheMaxAgeMs`, and fetched again when a token names a `kid` the set
 * lacks (key rotation), at most once per `jwksCooldownMs`. When a refreshed discovery document
 * moves `jwks_uri`, the key set follows it.
 */
export class OidcIssuer {
  readonly #discovery: DiscoveryCache;
  #jwks: { readonly uri: string; readonly getKey: JWTVerifyGetKey } | undefined;

  constructor(readonly settings: OidcSettings) {
    this.#discovery = new DiscoveryCache(settings);
  }

  /** The discovery document; throws IdentityError `discovery_failed`. */
  metadata(): Promise<IssuerMetadata> {
    return this.#discovery.get();
  }

  /** The key resolver for jose's `jwtVerify`, for the current `jwks_uri`. */
  async keys(): Promise<JWTVerifyGetKey> {
    const { jwks_uri: uri } = await this.metadata();
    if (this.#jwks?.uri !== uri) {
      const settings = this.settings;
      const getKey = createRemoteJWKSet(new URL(uri), {
        cacheMaxAge: settings.jwksCacheMaxAgeMs,
        cooldownDuration: settings.jwksCooldownMs,
        timeoutDuration: settings.httpTimeoutMs,
        // Through the configured fetch (dispatcher, CA), with the body bounded: jose reads it whole.
        [customFetch]: async (url, init) => {
          const response = await settings.fetch(url, init);
          const text = await readBounded(response, MAX_JWKS_BYTES, 'JWKS endpoint');
          return new Response(text, { status: response.status, headers: response.headers });
        },
      });
      this.#jwks = { uri, getKey };
    }
    return this.#jwks.getKey;
  }
}
