/** What the test provider process and the tests that drive it agree on (JSON both ways). */

/** A user the provider knows; the scripted login names them by `username`. */
export interface TestAccount {
  username: string;
  sub: string;
  email?: string;
  emailVerified?: boolean;
  name?: string;
}

export interface TestClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  token_endpoint_auth_method: 'client_secret_basic' | 'client_secret_post';
}

/** Written to a file the provider process reads at start. */
export interface ProviderConfig {
  accounts: TestAccount[];
  clients: TestClient[];
  /** Required as `x-test-admin` on the `/__test/` endpoints. */
  adminToken: string;
  cookieKeys: string[];
}

/** Behaviour the tests change while the provider runs (`POST /__test/knobs`). */
export interface ProviderKnobs {
  /** Lifetime of issued ID tokens, in seconds. */
  idTokenTtlS: number;
  /** Lifetime of device codes, in seconds. */
  deviceCodeTtlS: number;
  /** `interval` added to device authorization answers; null: none (clients then use 5 s). */
  deviceIntervalS: number | null;
  /** How many of the next `authorization_pending` answers become `slow_down`. */
  slowDownPolls: number;
}

/** One answer of the token endpoint, as the provider saw it. */
export interface TokenRequestRecord {
  /** ms since the epoch. */
  at: number;
  /** The OAuth error answered, or null for tokens. */
  error: string | null;
  /** How the client authenticated: an HTTP Basic Authorization header, or not (then in the body). */
  clientAuth: 'basic' | 'body';
}

/** `GET /__test/stats`. */
export interface ProviderStats {
  jwksRequests: number;
  /** The last 100 token endpoint answers, oldest first. */
  tokenRequests: TokenRequestRecord[];
  /** Key ids of the JWKS; the first one signs. */
  kids: string[];
}
