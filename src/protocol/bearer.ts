/** The HTTP authentication scheme every token is presented with (RFC 6750). */
export const BEARER_SCHEME = 'Bearer';

/** Auth schemes are case-insensitive (RFC 9110); the token is one run of non-blanks. */
const BEARER_CREDENTIALS = new RegExp(`^${BEARER_SCHEME}\\s+(\\S+)\\s*$`, 'i');

/** The `Authorization` header value that presents `token`. */
export function bearerAuthorization(token: string): string {
  return `${BEARER_SCHEME} ${token}`;
}

/** The token of an `Authorization: Bearer <token>` value; undefined when there is none. */
export function parseBearer(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  return BEARER_CREDENTIALS.exec(authorization)?.[1];
}
