import { verifyIdToken, type IdTokenClaims } from './id-token.js';
import type { IssuerMetadata } from './issuer-metadata.js';
import type { OidcIssuer } from './oidc-issuer.js';
import type { TokenSet } from './token-endpoint.js';
import { fetchUserInfo, verifiedFlag } from './userinfo.js';

/** A person the issuer vouched for, from a verified ID token (and UserInfo, see identityFromTokens). */
export interface OidcIdentity {
  readonly issuer: string;
  readonly subject: string;
  readonly email: string | undefined;
  /** True only when the issuer says so. */
  readonly emailVerified: boolean;
  readonly name: string | undefined;
  /** The verified ID token's claims. */
  readonly claims: IdTokenClaims;
}

/** A finished login: who, and the issuer's tokens (the ID token verified, the others opaque). */
export interface OidcLoginResult {
  readonly identity: OidcIdentity;
  readonly tokens: TokenSet;
}

/**
 * Verifies the ID token of `tokens` and reads the identity from it. When the ID token carries no
 * email but the `email` scope was asked for, UserInfo is asked (conformant issuers put
 * scope-requested claims there, not in the ID token, whenever an access token is issued).
 */
export async function identityFromTokens(
  issuer: OidcIssuer,
  metadata: IssuerMetadata,
  tokens: TokenSet,
  nonce: string | undefined,
  signal?: AbortSignal,
): Promise<OidcLoginResult> {
  const claims = await verifyIdToken(issuer, tokens.idToken, { nonce });
  let email = typeof claims.email === 'string' ? claims.email : undefined;
  let emailVerified = verifiedFlag(claims.email_verified);
  let name = typeof claims.name === 'string' ? claims.name : undefined;
  if (email === undefined && issuer.settings.scopes.includes('email') && metadata.userinfo_endpoint !== undefined) {
    const info = await fetchUserInfo(issuer.settings, metadata, tokens.accessToken, claims.sub, signal);
    email = info.email;
    emailVerified = info.emailVerified ?? emailVerified;
    name ??= info.name;
  }
  return {
    identity: { issuer: claims.iss, subject: claims.sub, email, emailVerified: emailVerified === true, name, claims },
    tokens,
  };
}
