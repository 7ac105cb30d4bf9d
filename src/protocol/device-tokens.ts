/** Device token limits; their schemas are in schemas/device-tokens.ts. */

/** The longest `expiring_within` accepted: about ten years, in seconds. */
export const MAX_EXPIRING_WITHIN_SECONDS = 315_360_000;

/** How long a device's other tokens stay valid once it renewed (capped by their own expiry). */
export const DEVICE_TOKEN_OVERLAP_SECONDS = 300;
