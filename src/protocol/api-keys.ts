/** Limits of users' personal API keys (docs/protocol.md "Personal API keys"); their schemas are in schemas/api-keys.ts. */

/** An API key's lifetime when the request names none: 90 days (as Tailscale's and Headscale's keys). */
export const DEFAULT_API_KEY_TTL_SECONDS = 90 * 24 * 3600;
/** The longest an API key may live: one year. */
export const MAX_API_KEY_TTL_SECONDS = 365 * 24 * 3600;
/** Organizations one API key may name at most. */
export const MAX_API_KEY_ORGANIZATIONS = 100;
/** Unexpired, unrevoked API keys one user may hold at most; past it, creating one is 409 `conflict`. */
export const MAX_API_KEYS_PER_USER = 100;
